package locations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun"
)

// placeRow is a row of gazetteer_places.
type placeRow struct {
	bun.BaseModel `bun:"table:gazetteer_places"`

	ID          string  `bun:"id,pk"`
	Name        string  `bun:"name"`
	NameNorm    string  `bun:"name_norm"`
	NameRev     string  `bun:"name_rev"`
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

// prefix adds "col starts with p" in the form the dialect's index serves:
// LIKE 'p%' over a text_pattern_ops index on PostgreSQL, GLOB 'p*' over a
// BINARY index on SQLite. p is a normalised name or postcode, which holds no
// wildcard characters of either.
func (s *Store) prefix(q *bun.SelectQuery, col, p string) *bun.SelectQuery {
	if s.pg {
		return q.Where("? LIKE ?", bun.Ident(col), p+"%")
	}
	return q.Where("? GLOB ?", bun.Ident(col), p+"*")
}

func country(q *bun.SelectQuery, iso string) *bun.SelectQuery {
	if iso != "" {
		q = q.Where("country_iso = ?", iso)
	}
	return q
}

// PlacesByPrefix answers places whose normalised name starts with p, exact
// names first, then the most populous.
func (s *Store) PlacesByPrefix(ctx context.Context, p, countryISO string, limit int) ([]placeRow, error) {
	var rows []placeRow
	q := s.prefix(s.db.NewSelect().Model(&rows), "name_norm", p)
	err := country(q, countryISO).
		OrderExpr("CASE WHEN name_norm = ? THEN 0 ELSE 1 END", p).
		OrderExpr("population DESC, name_norm, id").
		Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// PlacesByNames answers places with one of the normalised names, most
// populous first.
func (s *Store) PlacesByNames(ctx context.Context, names []string, countryISO string, limit int) ([]placeRow, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var rows []placeRow
	q := s.db.NewSelect().Model(&rows).Where("name_norm IN (?)", bun.In(names))
	err := country(q, countryISO).OrderExpr("population DESC, name_norm, id").Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// NamesByPrefix lists distinct normalised names starting with p (rev: of the
// reversed names, i.e. names ending with the reverse of p): candidates of the
// one-edit fuzzy search.
func (s *Store) NamesByPrefix(ctx context.Context, p string, rev bool, countryISO string, limit int) ([]string, error) {
	col := "name_norm"
	if rev {
		col = "name_rev"
	}
	var names []string
	q := s.prefix(s.db.NewSelect().Model((*placeRow)(nil)).Distinct().Column("name_norm"), col, p)
	err := country(q, countryISO).Limit(int64(limit)).Scan(ctx, &names)
	return names, err
}

// SimilarNames lists names close to q by trigram similarity (PostgreSQL's
// pg_trgm, over its GIN index); nil on SQLite.
func (s *Store) SimilarNames(ctx context.Context, q, countryISO string, limit int) ([]string, error) {
	if !s.pg {
		return nil, nil
	}
	var names []string
	sel := s.db.NewSelect().Model((*placeRow)(nil)).Column("name_norm").
		Where("name_norm % ?", q)
	err := country(sel, countryISO).
		GroupExpr("name_norm").
		OrderExpr("similarity(name_norm, ?) DESC, name_norm", q).
		Limit(int64(limit)).Scan(ctx, &names)
	return names, err
}

// PostcodesByPrefix answers postcodes whose normalised code starts with p:
// the exact code first, then districts, then by code.
func (s *Store) PostcodesByPrefix(ctx context.Context, p, countryISO string, limit int) ([]postcodeRow, error) {
	var rows []postcodeRow
	q := s.prefix(s.db.NewSelect().Model(&rows), "code_norm", p)
	err := country(q, countryISO).
		OrderExpr("CASE WHEN code_norm = ? THEN 0 ELSE 1 END", p).
		OrderExpr("CASE WHEN is_district THEN 0 ELSE 1 END, length(code_norm), code_norm, country_iso").
		Limit(int64(limit)).Scan(ctx)
	return rows, err
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
func nearestOrder(q *bun.SelectQuery, c Coordinates, cosLat float64) *bun.SelectQuery {
	return q.OrderExpr("(lat - ?) * (lat - ?) + ((lon - ?) * ?) * ((lon - ?) * ?)", c.Lat, c.Lat, c.Lon, cosLat, c.Lon, cosLat)
}

// PlacesInBox answers the places inside b nearest c first (at most limit).
func (s *Store) PlacesInBox(ctx context.Context, b Box, c Coordinates, cosLat float64, limit int) ([]placeRow, error) {
	var rows []placeRow
	q := s.db.NewSelect().Model(&rows).
		Where("lat BETWEEN ? AND ?", b.MinLat, b.MaxLat).
		Where("lon BETWEEN ? AND ?", b.MinLon, b.MaxLon)
	err := nearestOrder(q, c, cosLat).Limit(int64(limit)).Scan(ctx)
	return rows, err
}

// PostcodesInBox answers the postcodes inside b nearest c first (at most limit).
func (s *Store) PostcodesInBox(ctx context.Context, b Box, c Coordinates, cosLat float64, limit int) ([]postcodeRow, error) {
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
		Set("name = EXCLUDED.name, name_norm = EXCLUDED.name_norm, name_rev = EXCLUDED.name_rev, kind = EXCLUDED.kind").
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
// is one set-based statement, whatever the size of the gazetteer.
func (s *Store) RefreshCounts(ctx context.Context, idb bun.IDB) error {
	stmts := []string{
		`INSERT INTO gazetteer_postcodes (id, code, code_norm, parent, is_district, place_name, place_norm,
			   country_iso, country_name, region_iso, region_name, lat, lon, children)
			 SELECT c.country_iso || ':' || c.parent, c.parent, c.parent, '', TRUE, MIN(c.place_name), MIN(c.place_norm),
			   c.country_iso, MIN(c.country_name), MIN(c.region_iso), MIN(c.region_name), AVG(c.lat), AVG(c.lon), 0
			 FROM gazetteer_postcodes c
			 WHERE c.parent <> '' AND NOT EXISTS (
			   SELECT 1 FROM gazetteer_postcodes d WHERE d.country_iso = c.country_iso AND d.code_norm = c.parent)
			 GROUP BY c.country_iso, c.parent`,
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

// Analyze refreshes the planner's statistics after a bulk load, so that the
// indexes are used at once.
func (s *Store) Analyze(ctx context.Context) error {
	for _, t := range []string{"gazetteer_places", "gazetteer_postcodes"} {
		if _, err := s.db.ExecContext(ctx, "ANALYZE "+t); err != nil {
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
