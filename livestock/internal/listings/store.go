package listings

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/agritrade/api/livestock/internal/categories"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/filestore"
	gojson "github.com/goccy/go-json"
	"github.com/uptrace/bun"
)

// Store is the only place that knows the listing tables:
// livestock_listings (one row per listing: JSON documents plus the indexed
// search columns), livestock_listing_info (additionalInfo values),
// livestock_wishlist and livestock_reports.
type Store struct {
	// Conn runs the queries: the pool, or within InTx one transaction.
	db.Conn
	pg bool
}

// NewStore returns a store over db.
func NewStore(bdb *bun.DB) *Store { return &Store{Conn: db.NewConn(bdb), pg: db.IsPostgres(bdb)} }

// InTx runs fn with a store bound to one transaction (db.Conn.InTx: the
// SQLite write gate, the hooks after the commit); an error from fn rolls it
// back. Services speak of listings, not of bun.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	return s.Conn.InTx(ctx, func(ctx context.Context, c db.Conn) error {
		return fn(ctx, &Store{Conn: c, pg: s.pg})
	})
}

type listingRow struct {
	bun.BaseModel `bun:"table:livestock_listings,alias:l"`

	ID               string     `bun:"id,pk"`
	UserID           string     `bun:"user_id"`
	OrganisationID   string     `bun:"organisation_id"`
	OrganisationName string     `bun:"organisation_name"`
	Kind             string     `bun:"kind"`
	Type             string     `bun:"type"`
	Status           string     `bun:"status"`
	BreedType        *string    `bun:"breed_type"`
	BreedSociety     *string    `bun:"breed_society"`
	Sexes            *string    `bun:"sexes"`
	MinAge           *float64   `bun:"min_age"`
	MaxAge           *float64   `bun:"max_age"`
	Lat              *float64   `bun:"lat"`
	Lon              *float64   `bun:"lon"`
	PriceType        string     `bun:"price_type"`
	PriceAmount      float64    `bun:"price_amount"`
	PriceCurrency    string     `bun:"price_currency"`
	Hidden           bool       `bun:"hidden"`
	CategoryIDs      string     `bun:"category_ids"`
	Location         *string    `bun:"location"`
	Price            string     `bun:"price"`
	Files            string     `bun:"files"`
	Description      string     `bun:"description"`
	Tags             string     `bun:"tags"`
	Properties       *string    `bun:"properties"`
	CreatedAt        time.Time  `bun:"created_at"`
	UpdatedAt        time.Time  `bun:"updated_at"`
	ClosedAt         *time.Time `bun:"closed_at"`

	DistanceKm   *float64 `bun:"distance_km,scanonly"`
	IsWishlisted bool     `bun:"is_wishlisted,scanonly"`
	// Total is the search's number of matches, on every row of a page (Search).
	Total int `bun:"total,scanonly"`
}

type infoRow struct {
	bun.BaseModel `bun:"table:livestock_listing_info"`

	ListingID string `bun:"listing_id,pk"`
	Value     string `bun:"value,pk"`
}

type wishRow struct {
	bun.BaseModel `bun:"table:livestock_wishlist"`

	UserID    string    `bun:"user_id,pk"`
	ListingID string    `bun:"listing_id,pk"`
	CreatedAt time.Time `bun:"created_at"`
}

type reportRow struct {
	bun.BaseModel `bun:"table:livestock_reports,alias:r"`

	ID             string     `bun:"id,pk"`
	ListingID      string     `bun:"listing_id"`
	UserID         string     `bun:"user_id"`
	UserName       string     `bun:"user_name"`
	OrganisationID string     `bun:"organisation_id"`
	Reason         string     `bun:"reason"`
	Message        *string    `bun:"message"`
	CreatedAt      time.Time  `bun:"created_at"`
	ReviewedAt     *time.Time `bun:"reviewed_at"`
	ReviewedBy     *string    `bun:"reviewed_by"`
	Decision       *string    `bun:"decision"`
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// toRow flattens a listing into its row and its additionalInfo values.
func toRow(l *Listing) (*listingRow, []infoRow, error) {
	r := &listingRow{
		ID: l.ID, UserID: l.UserID, OrganisationID: l.OrganisationID, OrganisationName: l.OrganisationName,
		Kind: string(l.Kind), Type: l.Type, Status: l.Status, PriceType: l.Price.Type,
		PriceAmount: l.Price.PricePerUnit.Amount, PriceCurrency: l.Price.PricePerUnit.Currency, Hidden: l.Hidden,
		Description: l.Description, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, ClosedAt: l.ClosedAt,
	}
	var err error
	enc := func(dst *string, v any) {
		if err == nil {
			*dst, err = jsonText(v)
		}
	}
	enc(&r.CategoryIDs, nonNil(l.CategoryIDs))
	enc(&r.Price, l.Price)
	enc(&r.Files, nonNil(l.Files))
	enc(&r.Tags, nonNil(l.Tags))
	if l.Location != nil {
		r.Location = new(string)
		enc(r.Location, l.Location)
		lat, lon := l.Location.Coordinates.Lat, l.Location.Coordinates.Lon
		r.Lat, r.Lon = &lat, &lon
	}
	var infos []infoRow
	if l.Properties != nil {
		r.Properties = new(string)
		enc(r.Properties, l.Properties)
		sf := l.Properties.searchable()
		r.BreedType, r.BreedSociety, r.Sexes = optional(sf.Breed), optional(sf.Society), optional(sf.Sexes)
		r.MinAge, r.MaxAge = sf.MinAge, sf.MaxAge
		for _, v := range sf.Info {
			infos = append(infos, infoRow{ListingID: l.ID, Value: v})
		}
	}
	return r, infos, err
}

// listing rebuilds the domain value of a row.
//
// Its JSON columns are read back with goccy/go-json, not encoding/json. They
// are encoding/json's own output (toRow), read on every row of every search
// page, and encoding/json, which checks each value in a pass of its own before
// decoding it, made that 9% of a search's CPU in a profile (20 rows, five
// columns each). goccy/go-json decodes a row in a fifth of the time
// (BenchmarkRowListing) and parses numbers with strconv, as encoding/json does.
// What clients send keeps encoding/json (the body binder's field errors).
// TestRowListing_DecodersAgree holds the two to the same values.
func (r *listingRow) listing() (*Listing, error) { return r.decode(gojson.Unmarshal) }

// decode is listing with the JSON decoder as a parameter, for the test that
// compares decoders.
func (r *listingRow) decode(unmarshal func([]byte, any) error) (*Listing, error) {
	l := &Listing{
		ID: r.ID, UserID: r.UserID, OrganisationID: r.OrganisationID, OrganisationName: r.OrganisationName,
		Kind: categories.Kind(r.Kind), Type: r.Type, Status: r.Status, Description: r.Description,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), ClosedAt: r.ClosedAt, Hidden: r.Hidden,
		DistanceKm: r.DistanceKm, IsWishlisted: r.IsWishlisted,
	}
	var err error
	dec := func(src string, dst any) {
		if err == nil && src != "" {
			err = unmarshal([]byte(src), dst)
		}
	}
	dec(r.CategoryIDs, &l.CategoryIDs)
	dec(r.Price, &l.Price)
	l.Files = []filestore.Ref{}
	dec(r.Files, &l.Files)
	dec(r.Tags, &l.Tags)
	if r.Location != nil {
		l.Location = &Location{}
		dec(*r.Location, l.Location)
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.ID, err)
	}
	if r.Properties != nil {
		if l.Properties, err = decodeProperties(l.Kind, []byte(*r.Properties), unmarshal); err != nil {
			return nil, fmt.Errorf("listing %s properties: %w", r.ID, err)
		}
	}
	return l, nil
}

// flatListing is a new listing as its rows (toRow). It is made before the
// transaction (flatten), so that encoding its JSON columns costs nothing to the
// writers queued behind it at the SQLite write gate: a create holds the gate
// only for its statements.
type flatListing struct {
	row   *listingRow
	infos []infoRow
}

// flatten makes l's rows for Insert.
func flatten(l *Listing) (*flatListing, error) {
	r, infos, err := toRow(l)
	if err != nil {
		return nil, err
	}
	return &flatListing{row: r, infos: infos}, nil
}

// Insert writes a new listing (flatten) with its additionalInfo values.
func (s *Store) Insert(ctx context.Context, f *flatListing) error {
	r, infos := f.row, f.infos
	if s.bunWrites() {
		if _, err := s.IDB.NewInsert().Model(r).Exec(ctx); err != nil {
			return err
		}
		return insertInfos(ctx, s.IDB, infos)
	}
	// SQLite: prepared once, as parsing bun's statement (every value in
	// its text) was 13% of a create's CPU. A plain INSERT, not OR ROLLBACK:
	// the transaction is shared with the other writers at the gate (db's
	// group commit), and a failing statement must undo itself only. Its
	// statement journal costs little, as the savepoint around it already
	// keeps a copy of each page it touches (in memory: temp_store).
	if _, err := s.ExecPrepared(ctx, insertQuery, insertArgs(r)...); err != nil {
		return err
	}
	return insertInfos(ctx, s.IDB, infos)
}

// bunWrites tells whether the hot writes (Insert, QueueAlert) go through
// bun's statements rather than ExecPrepared: on PostgreSQL, which runs writers
// side by side (see db.Prepared). A sampled request's statement gets its span
// from ExecPrepared too; bun's statement there cost a traced create half as
// much CPU again (BenchmarkTracing).
func (s *Store) bunWrites() bool { return s.pg }

// insertColumns are the columns of a listing's row, in the order of
// insertArgs (TestInsertColumns_AreTheRowsColumns keeps them the model's).
var insertColumns = []string{
	"id", "user_id", "organisation_id", "organisation_name", "kind", "type", "status",
	"breed_type", "breed_society", "sexes", "min_age", "max_age", "lat", "lon",
	"price_type", "price_amount", "price_currency", "hidden", "category_ids", "location",
	"price", "files", "description", "tags", "properties", "created_at", "updated_at", "closed_at",
}

// insertQuery is the SQLite insert of a listing's row.
var insertQuery = "INSERT INTO livestock_listings (" + strings.Join(insertColumns, ", ") +
	") VALUES (?" + strings.Repeat(", ?", len(insertColumns)-1) + ")"

// insertArgs are r's values as bun would write them for SQLite: times as
// its UTC text (so that they compare and sort with those bun wrote), nil
// pointers as NULL.
func insertArgs(r *listingRow) []any {
	return []any{
		r.ID, r.UserID, r.OrganisationID, r.OrganisationName, r.Kind, r.Type, r.Status,
		nullable(r.BreedType), nullable(r.BreedSociety), nullable(r.Sexes), nullable(r.MinAge), nullable(r.MaxAge),
		nullable(r.Lat), nullable(r.Lon),
		r.PriceType, r.PriceAmount, r.PriceCurrency, r.Hidden, r.CategoryIDs, nullable(r.Location),
		r.Price, r.Files, r.Description, r.Tags, nullable(r.Properties),
		db.TimeArg(r.CreatedAt), db.TimeArg(r.UpdatedAt), nullableTime(r.ClosedAt),
	}
}

func nullable[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullableTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return db.TimeArg(*t)
}

func insertInfos(ctx context.Context, tx bun.IDB, infos []infoRow) error {
	if len(infos) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&infos).Exec(ctx)
	return err
}

// BulkInsert writes many listings in batches, each batch in one transaction
// (sample data and benchmarks); InTx, so through the SQLite write gate like
// any other write. Call RefreshStatistics after a large load.
func (s *Store) BulkInsert(ctx context.Context, ls []*Listing) error {
	const batch = 500
	for start := 0; start < len(ls); start += batch {
		end := min(start+batch, len(ls))
		rows := make([]*listingRow, 0, end-start)
		var infos []infoRow
		for _, l := range ls[start:end] {
			r, in, err := toRow(l)
			if err != nil {
				return err
			}
			rows = append(rows, r)
			infos = append(infos, in...)
		}
		err := s.InTx(ctx, func(ctx context.Context, tx *Store) error {
			if _, err := tx.IDB.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return err
			}
			return insertInfos(ctx, tx.IDB, infos)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// RefreshStatistics refreshes the planner's statistics of the listing tables
// after a bulk load, so that searches pick the right index; on PostgreSQL it
// also vacuums, which lets the searches' index-only scans skip the table.
func (s *Store) RefreshStatistics(ctx context.Context) error {
	cmd := "ANALYZE "
	if s.pg {
		cmd = "VACUUM " + cmd
	}
	for _, table := range []string{"livestock_listings", "livestock_listing_info", "livestock_wishlist"} {
		if _, err := s.ExecContext(ctx, cmd+table); err != nil {
			return fmt.Errorf("refresh statistics of %s: %w", table, err)
		}
	}
	return nil
}

// Update rewrites a listing and its additionalInfo values.
func (s *Store) Update(ctx context.Context, l *Listing) error {
	r, infos, err := toRow(l)
	if err != nil {
		return err
	}
	if _, err := s.IDB.NewUpdate().Model(r).WherePK().ExcludeColumn("id", "created_at", "user_id", "organisation_id", "organisation_name", "kind", "type").Exec(ctx); err != nil {
		return err
	}
	if _, err := s.IDB.NewDelete().Model((*infoRow)(nil)).Where("listing_id = ?", l.ID).Exec(ctx); err != nil {
		return err
	}
	return insertInfos(ctx, s.IDB, infos)
}

// Get reads a listing, with whether userID has it on their wishlist; nil when
// there is none. forUpdate locks the row until tx ends (PostgreSQL; SQLite
// transactions hold the database's write lock from their start).
func (s *Store) Get(ctx context.Context, id, userID string, forUpdate bool) (*Listing, error) {
	var r listingRow
	q := s.IDB.NewSelect().Model(&r).ColumnExpr("l.*").
		ColumnExpr("EXISTS (SELECT 1 FROM livestock_wishlist AS w WHERE w.listing_id = l.id AND w.user_id = ?) AS is_wishlisted", userID).
		Where("l.id = ?", id)
	if forUpdate && s.pg {
		q.For("UPDATE OF l")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return nil, err
	}
	return r.listing()
}

// Close moves an active listing to a closed status; false when it was not active.
func (s *Store) Close(ctx context.Context, id, status string, at time.Time) (bool, error) {
	res, err := s.IDB.NewUpdate().Model((*listingRow)(nil)).
		Set("status = ?", status).Set("closed_at = ?", at).Set("updated_at = ?", at).
		Where("id = ?", id).Where("status = ?", StatusActive).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SetHidden shows or hides a listing in search.
func (s *Store) SetHidden(ctx context.Context, id string, hidden bool) error {
	// Hiding and showing are changes a catch-up reports (updated_at).
	_, err := s.IDB.NewUpdate().Model((*listingRow)(nil)).Set("hidden = ?", hidden).
		Set("updated_at = ?", time.Now().UTC().Truncate(time.Microsecond)).Where("id = ?", id).Exec(ctx)
	return err
}

// AddWish puts a listing on a user's wishlist; nothing happens when it is there.
func (s *Store) AddWish(ctx context.Context, userID, listingID string, at time.Time) error {
	_, err := s.IDB.NewInsert().Model(&wishRow{UserID: userID, ListingID: listingID, CreatedAt: at}).
		On("CONFLICT (user_id, listing_id) DO NOTHING").Exec(ctx)
	return err
}

// RemoveWish takes a listing off a user's wishlist.
func (s *Store) RemoveWish(ctx context.Context, userID, listingID string) error {
	_, err := s.IDB.NewDelete().Model((*wishRow)(nil)).Where("user_id = ?", userID).Where("listing_id = ?", listingID).Exec(ctx)
	return err
}

// HasReport tells whether a user already reported a listing.
func (s *Store) HasReport(ctx context.Context, listingID, userID string) (bool, error) {
	return s.IDB.NewSelect().Model((*reportRow)(nil)).Where("listing_id = ?", listingID).Where("user_id = ?", userID).Exists(ctx)
}

// InsertReport records a report.
func (s *Store) InsertReport(ctx context.Context, r *Report) error {
	_, err := s.IDB.NewInsert().Model(&reportRow{
		ID: r.ID, ListingID: r.ListingID, UserID: r.UserID, UserName: r.UserName, OrganisationID: r.OrganisationID,
		Reason: r.Reason, Message: r.Message, CreatedAt: r.CreatedAt,
	}).Exec(ctx)
	return err
}

// OpenReporters counts the distinct users with an unreviewed report of a listing.
func (s *Store) OpenReporters(ctx context.Context, listingID string) (int, error) {
	var n int
	err := s.IDB.NewSelect().Model((*reportRow)(nil)).ColumnExpr("count(DISTINCT r.user_id)").
		Where("r.listing_id = ?", listingID).Where("r.reviewed_at IS NULL").Scan(ctx, &n)
	return n, err
}

// ReviewReports marks every open report of a listing as reviewed.
func (s *Store) ReviewReports(ctx context.Context, listingID, adminID, decision string, at time.Time) error {
	_, err := s.IDB.NewUpdate().Model((*reportRow)(nil)).
		Set("reviewed_at = ?", at).Set("reviewed_by = ?", adminID).Set("decision = ?", decision).
		Where("listing_id = ?", listingID).Where("reviewed_at IS NULL").Exec(ctx)
	return err
}

// ReportFilter selects reports for moderation.
type ReportFilter struct {
	// Open: true only unreviewed, false only reviewed, nil both.
	Open      *bool
	ListingID string
}

// Reports answers a page of reports, oldest first unless desc, and the total.
func (s *Store) Reports(ctx context.Context, f ReportFilter, limit, offset int, desc bool) ([]*Report, int, error) {
	var rows []reportRow
	q := s.IDB.NewSelect().Model(&rows)
	if f.Open != nil {
		if *f.Open {
			q.Where("r.reviewed_at IS NULL")
		} else {
			q.Where("r.reviewed_at IS NOT NULL")
		}
	}
	if f.ListingID != "" {
		q.Where("r.listing_id = ?", f.ListingID)
	}
	dir := "ASC"
	if desc {
		dir = "DESC"
	}
	total, err := q.OrderExpr("r.created_at " + dir).OrderExpr("r.id " + dir).Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*Report, len(rows))
	for i, r := range rows {
		out[i] = &Report{ID: r.ID, ListingID: r.ListingID, UserID: r.UserID, UserName: r.UserName, OrganisationID: r.OrganisationID,
			Reason: r.Reason, Message: r.Message, CreatedAt: r.CreatedAt.UTC(), ReviewedAt: r.ReviewedAt}
		if r.ReviewedBy != nil {
			out[i].ReviewedBy = *r.ReviewedBy
		}
		if r.Decision != nil {
			out[i].Decision = *r.Decision
		}
	}
	return out, int(total), nil
}

// Viewer is who searches: their wishlist and the organisations whose closed
// listings they may see.
type Viewer struct {
	UserID string
	Orgs   []string
}

// facet names a filter whose own condition a facet count leaves out.
type facet int

const (
	noFacet facet = iota
	facetStatus
	facetKind
	facetBreed
	facetSociety
	facetSexes
	facetInfo
)

// distanceSQL is HaversineKm in SQL over the row's l.lat and l.lon, with the
// point's latitude twice and longitude once as arguments. PostgreSQL and
// SQLite (modernc, built with the math functions) both have the functions; only
// the two-argument minimum is spelled differently.
func (s *Store) distanceSQL() string {
	least := "MIN"
	if s.pg {
		least = "LEAST"
	}
	return fmt.Sprintf("2 * %v * asin(sqrt(%s(1.0, power(sin(radians(l.lat - ?) / 2), 2)"+
		" + cos(radians(?)) * cos(radians(l.lat)) * power(sin(radians(l.lon - ?) / 2), 2))))", EarthRadiusKm, least)
}

// binder answers the parameters of a search run as a prepared statement
// (db.Binder): on SQLite, for a search around a point, which the geo indexes
// answer whatever the point (the plan does not need the values). Others, and
// every search on PostgreSQL, keep bun's text with the values in it.
func (s *Store) binder(sr Search) *db.Binder {
	if s.pg || sr.Near == nil || sr.UpdatedSince != nil {
		return nil
	}
	return &db.Binder{}
}

// withinSQL is the circle test of a bound search (SQLite): the haversine term h
// of distanceSQL against withinBound, which is what 2R·asin(√min(1, h)) <= km
// says without its asin, sqrt and min, and radians(x) of the row's values
// spelled as SQLite computes it, x * (π/180), with the factor bound (degree).
// Five math functions a row instead of eleven: they were an eighth of a
// search's CPU, as each row of the box is tested.
const withinSQL = "power(sin((l.lat - ?) * ? / 2), 2) + cos(radians(?)) * cos(l.lat * ?)" +
	" * power(sin((l.lon - ?) * ? / 2), 2) <= ?"

// degree is π/180 as SQLite's radians() computes it, a float64 division at
// run time (a Go constant expression would be rounded once, from the exact
// value, and could differ in the last bit).
func degree() float64 {
	pi, deg := math.Pi, 180.0
	return pi / deg
}

// withinBound is the bound of the haversine term h for a radius: sin²(km/2R),
// as asin(√h) <= km/2R; a radius of half the Earth's circumference or more
// holds every point (h never exceeds 1, but for rounding).
func withinBound(km float64) float64 {
	a := km / (2 * EarthRadiusKm)
	if a >= math.Pi/2 {
		return 2
	}
	s := math.Sin(a)
	return s * s
}

// where adds the conditions of f to q, all but the one of skip (facets). A
// search never shows hidden (reported) listings; without a status filter it
// shows active listings; sold and found are only the viewer's organisations'.
func (s *Store) where(q *bun.SelectQuery, v Viewer, f Filter, skip facet) {
	s.whereBound(q, v, f, skip, nil)
}

// whereBound is where with its values as parameters of b (db.Binder; nil
// writes them into the text).
func (s *Store) whereBound(q *bun.SelectQuery, v Viewer, f Filter, skip facet, b *db.Binder) {
	q.Where("l.hidden = ?", b.Arg(false))
	orgs := v.Orgs
	if len(orgs) == 0 {
		// No organisation: an id no listing has keeps IN () valid SQL.
		orgs = []string{""}
	}
	// Around a point on SQLite, a search spells out the kinds and types it
	// does not filter on, so that the geo index, (status, kind, type, hidden,
	// band, lat, ...), serves it with a seek per kind, type and band, as it
	// serves a search of one kind. SQLite has no geo index without kind and
	// type since 0011: of the indexes a create writes, it cost the most (a
	// page at a random place every time: 16% more creates a second without).
	// Every listing has one of the kinds and types, so the lists change no
	// answer. PostgreSQL keeps the index (no skip scan before version 18).
	spellOut := !s.pg && f.Near != nil
	switch {
	case skip == facetStatus:
		q.Where("(l.status = ? OR (l.status IN (?) AND l.organisation_id IN (?)))", b.Arg(StatusActive), db.BindList(b, []string{StatusSold, StatusFound}), db.BindList(b, orgs))
	case f.Status == FilterActiveSelling:
		q.Where("l.status = ?", b.Arg(StatusActive)).Where("l.type = ?", b.Arg(Selling))
	case f.Status == FilterActiveBuying:
		q.Where("l.status = ?", b.Arg(StatusActive)).Where("l.type = ?", b.Arg(Buying))
	case f.Status == StatusSold || f.Status == StatusFound:
		q.Where("l.status = ?", b.Arg(f.Status)).Where("l.organisation_id IN (?)", db.BindList(b, orgs))
	case f.UpdatedSince != nil:
		// Catch-up: every listing the caller may see, its organisations' own
		// in any status (the org index), the others' while active.
		q.Where("(l.status = ? OR l.organisation_id IN (?))", b.Arg(StatusActive), db.BindList(b, orgs))
	default:
		q.Where("l.status = ?", b.Arg(StatusActive))
	}
	if spellOut && (skip == facetStatus || f.Status != FilterActiveSelling && f.Status != FilterActiveBuying) {
		q.Where("l.type IN (?)", db.BindList(b, Types))
	}
	if f.UpdatedSince != nil {
		q.Where("l.updated_at > ?", b.Arg(f.UpdatedSince.UTC()))
	}
	switch {
	case f.Kind != "" && skip != facetKind:
		q.Where("l.kind = ?", b.Arg(f.Kind))
	case spellOut:
		q.Where("l.kind IN (?)", db.BindList(b, categories.KindNames()))
	}
	if len(f.Breeds) > 0 && skip != facetBreed {
		q.Where("l.breed_type IN (?)", db.BindList(b, f.Breeds))
	}
	if len(f.Societies) > 0 && skip != facetSociety {
		q.Where("l.breed_society IN (?)", db.BindList(b, f.Societies))
	}
	if f.Sexes != "" && skip != facetSexes {
		q.Where("l.sexes = ?", b.Arg(f.Sexes))
	}
	if f.AdditionalInfo != "" && skip != facetInfo {
		q.Where("EXISTS (SELECT 1 FROM livestock_listing_info AS i WHERE i.listing_id = l.id AND i.value = ?)", b.Arg(f.AdditionalInfo))
	}
	// Age ranges overlap: the listing's oldest is not younger than minAge and
	// its youngest not older than maxAge.
	if f.MinAge != nil {
		q.Where("l.max_age >= ?", b.Arg(*f.MinAge))
	}
	if f.MaxAge != nil {
		q.Where("l.min_age <= ?", b.Arg(*f.MaxAge))
	}
	if f.Wishlisted {
		q.Where("EXISTS (SELECT 1 FROM livestock_wishlist AS w WHERE w.listing_id = l.id AND w.user_id = ?)", b.Arg(v.UserID))
	}
	if p := f.Near; p != nil {
		bx := boundingBox(p.Lat, p.Lon, p.Km)
		s.lonBandWhere(q, bx, b)
		q.Where("l.lat BETWEEN ? AND ?", b.Arg(bx.MinLat), b.Arg(bx.MaxLat))
		switch {
		case bx.AllLon:
			q.Where("l.lon IS NOT NULL")
		case bx.WrapLon:
			q.Where("(l.lon >= ? OR l.lon <= ?)", b.Arg(bx.MinLon), b.Arg(bx.MaxLon))
		default:
			q.Where("l.lon BETWEEN ? AND ?", b.Arg(bx.MinLon), b.Arg(bx.MaxLon))
		}
		if b == nil {
			q.Where(s.distanceSQL()+" <= ?", p.Lat, p.Lat, p.Lon, p.Km)
		} else {
			rad := degree()
			exact := []any{b.Arg(p.Lat), b.Arg(rad), b.Arg(p.Lat), b.Arg(rad), b.Arg(p.Lon), b.Arg(rad), b.Arg(withinBound(p.Km))}
			inner, outer := circleCover(p.Lat, p.Lon, p.Km, bx)
			// Most rows are settled by comparisons (geo.go: circleCover):
			// kept in an inner rectangle, dropped in a corner beyond an outer
			// one; SQLite stops an OR at its first true term and an AND at its
			// first false one, so only the others take the exact test.
			var sql strings.Builder
			var args []any
			sql.WriteString("((")
			for _, in := range inner {
				sql.WriteString("(l.lat BETWEEN ? AND ? AND l.lon BETWEEN ? AND ?) OR ")
				args = append(args, b.Arg(in.MinLat), b.Arg(in.MaxLat), b.Arg(in.MinLon), b.Arg(in.MaxLon))
			}
			for _, out := range outer {
				sql.WriteString("(l.lat BETWEEN ? AND ? OR l.lon BETWEEN ? AND ?) AND ")
				args = append(args, b.Arg(out.MinLat), b.Arg(out.MaxLat), b.Arg(out.MinLon), b.Arg(out.MaxLon))
			}
			sql.WriteString(withinSQL + "))")
			q.Where(sql.String(), append(args, exact...)...)
		}
	}
}

// lonBandWhere keeps the longitude bands of the box (geo.go: lonBands), so
// that the search indexes read one short latitude range per band: the bands
// as a list (an equality the indexes seek once per band) while few, as a
// range otherwise. A box around a pole adds nothing.
func (s *Store) lonBandWhere(q *bun.SelectQuery, bx box, b *db.Binder) {
	ranges, ok := bx.lonBands()
	if !ok {
		return
	}
	var bands []float64
	for _, r := range ranges {
		for x := r[0]; x <= r[1] && len(bands) <= maxLonBands; x++ {
			bands = append(bands, x)
		}
	}
	if len(bands) <= maxLonBands {
		q.Where(lonBandSQL(s.pg)+" IN (?)", db.BindList(b, bands))
		return
	}
	q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		for _, r := range ranges {
			q.WhereOr(lonBandSQL(s.pg)+" BETWEEN ? AND ?", b.Arg(r[0]), b.Arg(r[1]))
		}
		return q
	})
}

// selectListings selects whole listings with the caller's wishlist flag and,
// around a point, the distance.
func (s *Store) selectListings(rows *[]listingRow, v Viewer, sr Search, b *db.Binder) *bun.SelectQuery {
	q := s.IDB.NewSelect().Model(rows).ColumnExpr("l.*").
		ColumnExpr("EXISTS (SELECT 1 FROM livestock_wishlist AS w WHERE w.listing_id = l.id AND w.user_id = ?) AS is_wishlisted", b.Arg(v.UserID))
	if p := sr.Near; p != nil {
		q.ColumnExpr(s.distanceSQL()+" AS distance_km", b.Arg(p.Lat), b.Arg(p.Lat), b.Arg(p.Lon))
	}
	return q
}

// order sorts q by the search's sortBy, the id breaking ties.
func (s *Store) order(q *bun.SelectQuery, sr Search, b *db.Binder) {
	dir := " ASC"
	if sr.Page.SortDesc {
		dir = " DESC"
	}
	switch sr.Page.SortBy {
	case SortDistance:
		q.OrderExpr(s.distanceSQL()+dir, b.Arg(sr.Near.Lat), b.Arg(sr.Near.Lat), b.Arg(sr.Near.Lon))
	case SortUpdated:
		q.OrderExpr("l.updated_at" + dir)
	case SortPrice:
		q.OrderExpr("l.price_amount" + dir)
	default:
		q.OrderExpr("l.created_at" + dir)
	}
	q.OrderExpr("l.id" + dir)
}

// searchPage selects the ids of a search's page, each with the number of
// matches (total).
//
// With a binder (SQLite, around a point, a page past topNMax: searchNear
// chooses the others in Go) the matches are a common table expression,
// which SQLite materializes once since it is read twice: counted, and sorted
// for the page. A window count(*) OVER () buffers every match in a
// table of its own and deletes it again, on top of the sort (14% of a search's
// CPU in a profile, against 18% less time for the statement this way). The
// matches carry only the columns of the order, which the geo indexes hold for
// the default order (newest first) and the distance.
func (s *Store) searchPage(v Viewer, sr Search, b *db.Binder) *bun.SelectQuery {
	if b == nil {
		page := s.IDB.NewSelect().Model((*listingRow)(nil)).ColumnExpr("l.id").ColumnExpr("count(*) OVER () AS total")
		s.whereBound(page, v, sr.Filter, noFacet, nil)
		s.order(page, sr, nil)
		return page.Limit(int64(sr.Page.Limit)).Offset(int64(sr.Page.Offset))
	}
	matches := s.IDB.NewSelect().Model((*listingRow)(nil)).ColumnExpr("l.id").ColumnExpr("l.rowid AS rid")
	switch sr.Page.SortBy {
	case SortDistance:
		matches.ColumnExpr("l.lat").ColumnExpr("l.lon")
	case SortUpdated:
		matches.ColumnExpr("l.updated_at")
	case SortPrice:
		matches.ColumnExpr("l.price_amount")
	default:
		matches.ColumnExpr("l.created_at")
	}
	s.whereBound(matches, v, sr.Filter, noFacet, b)
	page := s.IDB.NewSelect().With("m", matches).TableExpr("m AS l").
		ColumnExpr("l.rid").ColumnExpr("(SELECT count(*) FROM m) AS total")
	s.order(page, sr, b)
	return page.Limit(int64(sr.Page.Limit)).Offset(int64(sr.Page.Offset))
}

// Search answers a page of a search and the number of matches, in one
// statement that reads the search index once: the ids of the page are chosen
// from the index alone (filters, distance and the default order are all in the
// search indexes), the count riding along (searchPage), then only the page's
// rows are read. Counting apart cost a second pass over
// the box and a second statement to prepare, a third of the request. On
// SQLite, a search around a point reads the matches once and chooses its
// page in Go instead (topn.go: searchNear), unless the page is further on
// than topNMax.
func (s *Store) Search(ctx context.Context, v Viewer, sr Search) ([]*Listing, int, error) {
	b := s.binder(sr)
	if b != nil && sr.Page.Offset+sr.Page.Limit <= topNMax {
		return s.searchNear(ctx, v, sr)
	}
	page := s.searchPage(v, sr, b)
	var rows []listingRow
	// b collects the values as bun writes the text, so in the order of its
	// placeholders, whatever the order of the calls above.
	join := "JOIN (?) AS p ON p.id = l.id"
	if b != nil {
		join = "JOIN (?) AS p ON l.rowid = p.rid"
	}
	q := s.selectListings(&rows, v, sr, b).ColumnExpr("p.total").Join(join, page)
	s.order(q, sr, b)
	if err := q.Conn(s.Prepared(b)).Scan(ctx); err != nil {
		return nil, 0, err
	}
	if len(rows) == 0 {
		// Past the last match (or none): the window had no row to ride on.
		if sr.Page.Offset == 0 {
			return []*Listing{}, 0, nil
		}
		total, err := s.Count(ctx, v, sr.Filter)
		return []*Listing{}, total, err
	}
	out := make([]*Listing, len(rows))
	for i := range rows {
		l, err := rows[i].listing()
		if err != nil {
			return nil, 0, err
		}
		out[i] = l
	}
	return out, rows[0].Total, nil
}

// Count answers how many listings a search matches.
func (s *Store) Count(ctx context.Context, v Viewer, f Filter) (int, error) {
	q := s.IDB.NewSelect().Model((*listingRow)(nil))
	s.where(q, v, f, noFacet)
	n, err := q.Count(ctx)
	return int(n), err
}

// Stream calls fn with every listing of a search, in order, one row at a time
// (CSV exports of any size in constant memory).
func (s *Store) Stream(ctx context.Context, v Viewer, sr Search, fn func(*Listing) error) error {
	var none []listingRow
	q := s.selectListings(&none, v, sr, nil)
	s.where(q, v, sr.Filter, noFacet)
	s.order(q, sr, nil)
	rows, err := q.Rows(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }() // the read error, if any, comes from rows.Err
	for rows.Next() {
		var r listingRow
		if err := q.DB().ScanRow(ctx, rows, &r); err != nil {
			return err
		}
		l, err := r.listing()
		if err != nil {
			return err
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return rows.Err()
}

// FacetValue is the count of one value of a filter.
type FacetValue struct {
	Value string `bun:"value" json:"value"`
	Count int    `bun:"n" json:"count"`
}

// Facets counts, for each filter, the listings of each of its values among
// those matching all the other filters: one grouped query per filter.
func (s *Store) Facets(ctx context.Context, v Viewer, f Filter) (map[string][]FacetValue, error) {
	statusExpr := "CASE WHEN l.status = 'active' THEN 'active-' || l.type ELSE l.status END"
	specs := []struct {
		name string
		skip facet
		expr string
		join bool
	}{
		{"status", facetStatus, statusExpr, false},
		{"commodityType", facetKind, "l.kind", false},
		{"commodityBreed", facetBreed, "l.breed_type", false},
		{"commodityBreedSociety", facetSociety, "l.breed_society", false},
		{"commoditySexes", facetSexes, "l.sexes", false},
		{"commodityAdditionalInfo", facetInfo, "i.value", true},
	}
	out := make(map[string][]FacetValue, len(specs))
	for _, sp := range specs {
		vals := []FacetValue{}
		q := s.IDB.NewSelect().Model((*listingRow)(nil)).
			ColumnExpr(sp.expr + " AS value").ColumnExpr("count(*) AS n")
		if sp.join {
			q.Join("JOIN livestock_listing_info AS i ON i.listing_id = l.id")
		}
		s.where(q, v, f, sp.skip)
		q.Where(sp.expr + " IS NOT NULL").GroupExpr(sp.expr).OrderExpr("n DESC").OrderExpr("value ASC")
		if err := q.Scan(ctx, &vals); err != nil {
			return nil, fmt.Errorf("facet %s: %w", sp.name, err)
		}
		out[sp.name] = vals
	}
	return out, nil
}
