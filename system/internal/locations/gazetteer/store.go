package gazetteer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/system/internal/locations/place"
	"github.com/uptrace/bun"
)

// placeRow is a row of gazetteer_places.
type placeRow struct {
	bun.BaseModel `bun:"table:gazetteer_places"`

	ID          string  `bun:"id,pk"`
	Name        string  `bun:"name"`
	NameNorm    string  `bun:"name_norm"`
	Kind        string  `bun:"kind"`
	CountryISO  string  `bun:"country_iso"`
	CountryName string  `bun:"country_name"`
	RegionISO   string  `bun:"region_iso"`
	RegionName  string  `bun:"region_name"`
	Lat         float64 `bun:"lat"`
	Lon         float64 `bun:"lon"`
	Population  int64   `bun:"population"`
	ThreeWords  *string `bun:"three_words"`
	Postcodes   int     `bun:"postcodes"`
}

// postcodeRow is a row of gazetteer_postcodes.
type postcodeRow struct {
	bun.BaseModel `bun:"table:gazetteer_postcodes"`

	ID          string  `bun:"id,pk"`
	Code        string  `bun:"code"`
	CodeNorm    string  `bun:"code_norm"`
	Parent      string  `bun:"parent"`
	IsDistrict  bool    `bun:"is_district"`
	PlaceName   string  `bun:"place_name"`
	PlaceNorm   string  `bun:"place_norm"`
	CountryISO  string  `bun:"country_iso"`
	CountryName string  `bun:"country_name"`
	RegionISO   string  `bun:"region_iso"`
	RegionName  string  `bun:"region_name"`
	Lat         float64 `bun:"lat"`
	Lon         float64 `bun:"lon"`
	ThreeWords  *string `bun:"three_words"`
	Children    int     `bun:"children"`
}

// Locality containment: a postcode belongs to a place when it carries the
// place's name and lies within about 30 km of it (the box below), so that the
// many "Newport"s keep their own postcodes.
const (
	localityLatDeg = 0.27
	localityLonDeg = 0.5
)

// Store is the only code that knows the gazetteer's SQL.
type Store struct {
	db *bun.DB
	pg bool
}

// NewStore wraps the database.
func NewStore(bdb *bun.DB) *Store { return &Store{db: bdb, pg: db.IsPostgres(bdb)} }

// DB is the database the store uses (for transactions of the importer).
func (s *Store) DB() *bun.DB { return s.db }

// prefixEnd is appended to a prefix to bound its range: no normalised name or
// postcode holds it (Normalize keeps letters and digits only), and it sorts
// after every other character byte-wise.
const prefixEnd = "\U0010FFFF"

// prefix adds "col starts with p" as a range over the column's byte order
// (BINARY on SQLite, COLLATE "C" on PostgreSQL), which a plain B-tree index
// serves and which gives the rows in index order. A LIKE would also match the
// trigram index on PostgreSQL, which the planner may prefer and is far slower
// for prefixes.
func (s *Store) prefix(q *bun.SelectQuery, col, p string) *bun.SelectQuery {
	return q.Where("? >= ? AND ? < ?", bun.Ident(col), p, bun.Ident(col), p+prefixEnd)
}

func country(q *bun.SelectQuery, iso string) *bun.SelectQuery {
	if iso != "" {
		q = q.Where("country_iso = ?", iso)
	}
	return q
}

// bigPlace is the population from which a place is ranked by size in
// prefix searches (the partial index gazetteer_places_big_prefix holds them).
const bigPlace = 5000

// PlacesByPrefix answers places whose normalised name starts with p: towns
// of bigPlace people or more first (the exact name first, then by
// population), then the smaller places in name order (which puts an exact
// name first too). Both are index range scans bounded by limit, whatever the
// number of places sharing the prefix.
func (s *Store) PlacesByPrefix(ctx context.Context, p, countryISO string, limit int) ([]placeRow, error) {
	var big []placeRow
	q := s.prefix(s.db.NewSelect().Model(&big), "name_norm", p).Where("population >= ?", bigPlace)
	err := country(q, countryISO).
		OrderExpr("CASE WHEN name_norm = ? THEN 0 ELSE 1 END", p).
		OrderExpr("population DESC, name_norm, id").
		Limit(int64(limit)).Scan(ctx)
	if err != nil || len(big) >= limit {
		return big, err
	}
	var small []placeRow
	q = s.prefix(s.db.NewSelect().Model(&small), "name_norm", p).Where("population < ?", bigPlace)
	// name_norm alone, so that the index gives the order and the scan stops at the limit.
	if err := country(q, countryISO).OrderExpr("name_norm").Limit(int64(limit - len(big))).Scan(ctx); err != nil {
		return nil, err
	}
	return append(big, small...), nil
}

// PlacesByNames answers places with one of the normalised names, most
// populous first.
func (s *Store) PlacesByNames(ctx context.Context, names []string, countryISO string, limit int) ([]placeRow, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var rows []placeRow
	q := s.db.NewSelect().Model(&rows).Where("name_norm IN (?)", bun.List(names))
	err := country(q, countryISO).OrderExpr("population DESC, name_norm, id").Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// NamesByPrefix lists distinct normalised names starting with p, in name
// order: candidates of the fuzzy search for a name typed in part.
func (s *Store) NamesByPrefix(ctx context.Context, p, countryISO string, limit int) ([]string, error) {
	var names []string
	q := s.prefix(s.db.NewSelect().Model((*placeRow)(nil)).Distinct().Column("name_norm"), "name_norm", p)
	err := country(q, countryISO).Limit(int64(limit)).Scan(ctx, &names)
	return names, err
}

// NamesIn answers which of the normalised names exist: one index lookup per
// name, in one statement.
func (s *Store) NamesIn(ctx context.Context, names []string, countryISO string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var found []string
	q := s.db.NewSelect().Model((*placeRow)(nil)).Distinct().Column("name_norm").Where("name_norm IN (?)", bun.List(names))
	err := country(q, countryISO).Scan(ctx, &found)
	return found, err
}

// similarTimeout bounds a trigram search: over a large gazetteer a query
// with common trigrams can take long, and suggestions are a bonus.
const similarTimeout = 250 * time.Millisecond

// SimilarNames lists the names of towns (bigPlace people or more) most
// similar to q by trigrams (PostgreSQL's pg_trgm: nearest first over the GiST
// index); nil on SQLite, and nil when the search outlasts similarTimeout.
func (s *Store) SimilarNames(ctx context.Context, q, countryISO string, limit int) ([]string, error) {
	if !s.pg {
		return nil, nil
	}
	var rows []placeRow
	err := db.InTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", similarTimeout.Milliseconds())); err != nil {
			return err
		}
		// The expression and the population bound are those of the partial
		// trigram index gazetteer_places_name_trgm.
		sel := tx.NewSelect().Model(&rows).Column("name_norm").
			Where("population >= ?", bigPlace).Where("(' ' || name_norm) % ?", " "+q)
		return country(sel, countryISO).OrderExpr("(' ' || name_norm) <-> ?", " "+q).Limit(int64(limit)).Scan(ctx)
	})
	if db.IsQueryCanceled(err) && ctx.Err() == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rows))
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.NameNorm] {
			seen[r.NameNorm] = true
			names = append(names, r.NameNorm)
		}
	}
	return names, nil
}

// PostcodesByPrefix answers postcodes whose normalised code starts with p:
// first the districts and codes without hierarchy (the exact code, then the
// shortest; a partial index holds them), then full postcodes in code order.
// Both are index range scans bounded by limit.
func (s *Store) PostcodesByPrefix(ctx context.Context, p, countryISO string, limit int) ([]postcodeRow, error) {
	var top []postcodeRow
	q := s.prefix(s.db.NewSelect().Model(&top), "code_norm", p).Where("parent = ''")
	err := country(q, countryISO).
		OrderExpr("CASE WHEN code_norm = ? THEN 0 ELSE 1 END, length(code_norm), code_norm, country_iso", p).
		Limit(int64(limit)).Scan(ctx)
	if err != nil || len(top) >= limit {
		return top, err
	}
	var full []postcodeRow
	q = s.prefix(s.db.NewSelect().Model(&full), "code_norm", p).Where("parent <> ''")
	if err := country(q, countryISO).OrderExpr("code_norm").Limit(int64(limit - len(top))).Scan(ctx); err != nil {
		return nil, err
	}
	return append(top, full...), nil
}

// PostcodeByCode answers the postcodes with exactly this normalised code
// (one per country at most).
func (s *Store) PostcodeByCode(ctx context.Context, norm, countryISO string) ([]postcodeRow, error) {
	var rows []postcodeRow
	err := country(s.db.NewSelect().Model(&rows).Where("code_norm = ?", norm), countryISO).
		OrderExpr("country_iso").Scan(ctx)
	return rows, err
}

// Place answers a place by id; found is false when there is none.
func (s *Store) Place(ctx context.Context, id string) (row placeRow, found bool, err error) {
	err = s.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	return row, err == nil, ignoreNoRows(err)
}

// Postcode answers a postcode by id; found is false when there is none.
func (s *Store) Postcode(ctx context.Context, id string) (row postcodeRow, found bool, err error) {
	err = s.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	return row, err == nil, ignoreNoRows(err)
}

// DistrictPostcodes pages the full postcodes of a district, optionally only
// those starting with codePrefix.
func (s *Store) DistrictPostcodes(ctx context.Context, d postcodeRow, codePrefix string, limit, offset int) ([]postcodeRow, int, error) {
	var rows []postcodeRow
	q := s.db.NewSelect().Model(&rows).Where("country_iso = ? AND parent = ?", d.CountryISO, d.CodeNorm)
	if codePrefix != "" {
		q = s.prefix(q, "code_norm", codePrefix)
	}
	n, err := q.OrderExpr("code_norm").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(n), err
}

// LocalityPostcodes pages the postcodes (districts, or codes of systems
// without hierarchy) of a place, optionally only those starting with codePrefix.
func (s *Store) LocalityPostcodes(ctx context.Context, p placeRow, codePrefix string, limit, offset int) ([]postcodeRow, int, error) {
	var rows []postcodeRow
	q := s.db.NewSelect().Model(&rows).
		Where("country_iso = ? AND place_norm = ? AND parent = ''", p.CountryISO, p.NameNorm).
		Where("lat BETWEEN ? AND ?", p.Lat-localityLatDeg, p.Lat+localityLatDeg).
		Where("lon BETWEEN ? AND ?", p.Lon-localityLonDeg, p.Lon+localityLonDeg)
	if codePrefix != "" {
		q = s.prefix(q, "code_norm", codePrefix)
	}
	n, err := q.OrderExpr("length(code_norm), code_norm").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(n), err
}

// nearestOrder ranks rows by the equirectangular approximation of their
// distance to c: plain arithmetic on both dialects, exact enough at these
// ranges to keep the true nearest among the first few rows.
func nearestOrder(q *bun.SelectQuery, c place.Coordinates, cosLat float64) *bun.SelectQuery {
	return q.OrderExpr("(lat - ?) * (lat - ?) + ((lon - ?) * ?) * ((lon - ?) * ?)", c.Lat, c.Lat, c.Lon, cosLat, c.Lon, cosLat)
}

// PlacesInBox answers the places inside b nearest c first (at most limit).
func (s *Store) PlacesInBox(ctx context.Context, b place.Box, c place.Coordinates, cosLat float64, limit int) ([]placeRow, error) {
	var rows []placeRow
	q := s.db.NewSelect().Model(&rows).
		Where("lat BETWEEN ? AND ?", b.MinLat, b.MaxLat).
		Where("lon BETWEEN ? AND ?", b.MinLon, b.MaxLon)
	err := nearestOrder(q, c, cosLat).Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// PostcodesInBox answers the postcodes inside b nearest c first (at most limit).
func (s *Store) PostcodesInBox(ctx context.Context, b place.Box, c place.Coordinates, cosLat float64, limit int) ([]postcodeRow, error) {
	var rows []postcodeRow
	q := s.db.NewSelect().Model(&rows).
		Where("lat BETWEEN ? AND ?", b.MinLat, b.MaxLat).
		Where("lon BETWEEN ? AND ?", b.MinLon, b.MaxLon)
	err := nearestOrder(q, c, cosLat).Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// PlaceByThreeWords answers the place holding a stored three-word address.
func (s *Store) PlaceByThreeWords(ctx context.Context, w string) (row placeRow, found bool, err error) {
	err = s.db.NewSelect().Model(&row).Where("three_words = ?", w).Limit(1).Scan(ctx)
	return row, err == nil, ignoreNoRows(err)
}

// PostcodeByThreeWords answers the postcode holding a stored three-word address.
func (s *Store) PostcodeByThreeWords(ctx context.Context, w string) (row postcodeRow, found bool, err error) {
	err = s.db.NewSelect().Model(&row).Where("three_words = ?", w).Limit(1).Scan(ctx)
	return row, err == nil, ignoreNoRows(err)
}

// UpsertPlaces inserts or replaces places by id in one statement. A stored
// three-word address survives a row that carries none.
func (s *Store) UpsertPlaces(ctx context.Context, idb bun.IDB, rows []placeRow) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := idb.NewInsert().Model(&rows).
		On("CONFLICT (id) DO UPDATE").
		Set("name = EXCLUDED.name, name_norm = EXCLUDED.name_norm, kind = EXCLUDED.kind").
		Set("country_iso = EXCLUDED.country_iso, country_name = EXCLUDED.country_name").
		Set("region_iso = EXCLUDED.region_iso, region_name = EXCLUDED.region_name").
		Set("lat = EXCLUDED.lat, lon = EXCLUDED.lon, population = EXCLUDED.population").
		Set("three_words = COALESCE(EXCLUDED.three_words, ?TableAlias.three_words)").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("upsert %d places: %w", len(rows), err)
	}
	return nil
}

// UpsertPostcodes inserts or replaces postcodes by id in one statement.
func (s *Store) UpsertPostcodes(ctx context.Context, idb bun.IDB, rows []postcodeRow) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := idb.NewInsert().Model(&rows).
		On("CONFLICT (id) DO UPDATE").
		Set("code = EXCLUDED.code, code_norm = EXCLUDED.code_norm, parent = EXCLUDED.parent, is_district = EXCLUDED.is_district").
		Set("place_name = EXCLUDED.place_name, place_norm = EXCLUDED.place_norm").
		Set("country_iso = EXCLUDED.country_iso, country_name = EXCLUDED.country_name").
		Set("region_iso = EXCLUDED.region_iso, region_name = EXCLUDED.region_name").
		Set("lat = EXCLUDED.lat, lon = EXCLUDED.lon").
		Set("three_words = COALESCE(EXCLUDED.three_words, ?TableAlias.three_words)").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("upsert %d postcodes: %w", len(rows), err)
	}
	return nil
}

// RefreshCounts recomputes the derived parts after a seed or an import (in
// the caller's transaction): districts that only exist through their full postcodes get a
// row of their own (at the centre of their postcodes), districts count their
// postcodes and places count the postcodes named after them nearby. Each step
// is one set-based statement, whatever the size of the gazetteer; two
// replicas refreshing at once do not trip over each other's new districts.
func (s *Store) RefreshCounts(ctx context.Context, idb bun.IDB) error {
	stmts := []string{
		`INSERT INTO gazetteer_postcodes (id, code, code_norm, parent, is_district, place_name, place_norm,
			   country_iso, country_name, region_iso, region_name, lat, lon, children)
			 SELECT c.country_iso || ':' || c.parent, c.parent, c.parent, '', TRUE, MIN(c.place_name), MIN(c.place_norm),
			   c.country_iso, MIN(c.country_name), MIN(c.region_iso), MIN(c.region_name), AVG(c.lat), AVG(c.lon), 0
			 FROM gazetteer_postcodes c
			 WHERE c.parent <> '' AND NOT EXISTS (
			   SELECT 1 FROM gazetteer_postcodes d WHERE d.country_iso = c.country_iso AND d.code_norm = c.parent)
			 GROUP BY c.country_iso, c.parent
			 ON CONFLICT (id) DO NOTHING`,
		`UPDATE gazetteer_postcodes SET children = 0
			 WHERE children <> 0 AND NOT EXISTS (SELECT 1 FROM gazetteer_postcodes c
			   WHERE c.country_iso = gazetteer_postcodes.country_iso AND c.parent = gazetteer_postcodes.code_norm)`,
		`UPDATE gazetteer_postcodes SET children = agg.n
			 FROM (SELECT country_iso, parent, COUNT(*) AS n FROM gazetteer_postcodes WHERE parent <> ''
			       GROUP BY country_iso, parent) AS agg
			 WHERE gazetteer_postcodes.country_iso = agg.country_iso AND gazetteer_postcodes.code_norm = agg.parent
			   AND gazetteer_postcodes.children <> agg.n`,
		`UPDATE gazetteer_places SET postcodes = 0 WHERE postcodes <> 0`,
		fmt.Sprintf(`UPDATE gazetteer_places SET postcodes = agg.n
			 FROM (SELECT pl.id AS id, COUNT(*) AS n
			       FROM gazetteer_postcodes p
			       JOIN gazetteer_places pl ON pl.country_iso = p.country_iso AND pl.name_norm = p.place_norm
			        AND p.lat BETWEEN pl.lat - %[1]g AND pl.lat + %[1]g AND p.lon BETWEEN pl.lon - %[2]g AND pl.lon + %[2]g
			       WHERE p.parent = '' AND p.place_norm <> ''
			       GROUP BY pl.id) AS agg
			 WHERE gazetteer_places.id = agg.id`, localityLatDeg, localityLonDeg),
	}
	for _, q := range stmts {
		if _, err := idb.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("refresh gazetteer counts: %w", err)
		}
	}
	return nil
}

// metaRow is a row of gazetteer_meta.
type metaRow struct {
	bun.BaseModel `bun:"table:gazetteer_meta"`

	Key   string `bun:"key,pk"`
	Value string `bun:"value"`
}

// Meta answers a stored fact, "" when there is none.
func (s *Store) Meta(ctx context.Context, idb bun.IDB, key string) (string, error) {
	var row metaRow
	err := idb.NewSelect().Model(&row).Where("? = ?", bun.Ident("key"), key).Scan(ctx)
	return row.Value, ignoreNoRows(err)
}

// SetMeta stores a fact.
func (s *Store) SetMeta(ctx context.Context, idb bun.IDB, key, value string) error {
	_, err := idb.NewInsert().Model(&metaRow{Key: key, Value: value}).
		On("CONFLICT (key) DO UPDATE").Set("value = EXCLUDED.value").Exec(ctx)
	return err
}

// Counts answers the number of places and postcodes (for the import report).
func (s *Store) Counts(ctx context.Context) (places, postcodes int, err error) {
	np, err := s.db.NewSelect().Model((*placeRow)(nil)).Count(ctx)
	if err != nil {
		return 0, 0, err
	}
	nc, err := s.db.NewSelect().Model((*postcodeRow)(nil)).Count(ctx)
	return int(np), int(nc), err
}

// bulkCacheKiB is SQLite's page cache for the connection of an import: the
// default 2 MiB makes every index insertion of a large load a page miss.
const bulkCacheKiB = 65536

// BulkConn reserves a connection for a bulk load, with a larger page cache on
// SQLite; release restores the cache and returns the connection to the pool.
func (s *Store) BulkConn(ctx context.Context) (conn bun.Conn, release func(), err error) {
	if conn, err = s.db.Conn(ctx); err != nil {
		return conn, nil, err
	}
	if s.pg {
		return conn, func() { _ = conn.Close() }, nil
	}
	if _, err = conn.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", bulkCacheKiB)); err != nil {
		_ = conn.Close()
		return conn, nil, err
	}
	return conn, func() {
		_, _ = conn.ExecContext(context.Background(), "PRAGMA cache_size = -2000")
		_ = conn.Close()
	}, nil
}

// Analyze refreshes the planner's statistics after a bulk load, so that the
// indexes are used at once; on PostgreSQL VACUUM also marks the pages
// all-visible, which lets name lookups answer from the index alone.
func (s *Store) Analyze(ctx context.Context) error {
	cmd := "ANALYZE "
	if s.pg {
		cmd = "VACUUM (ANALYZE) "
	}
	for _, t := range []string{"gazetteer_places", "gazetteer_postcodes"} {
		if _, err := s.db.ExecContext(ctx, cmd+t); err != nil {
			return err
		}
	}
	return nil
}

func ignoreNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return err
}
