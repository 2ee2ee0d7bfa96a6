package loads

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/db"
	streamevents "github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/outbox"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Store reads and writes loads; it is the only code that knows their tables.
type Store struct {
	// Conn runs the queries: the pool, or within InTx one transaction.
	db.Conn
}

// NewStore returns a store over db.
func NewStore(bdb *bun.DB) *Store { return &Store{db.NewConn(bdb)} }

// InTx runs fn with a store bound to one transaction (db.Conn.InTx: the
// SQLite write gate, the hooks after the commit); an error from fn rolls it
// back. Services speak of loads, not of bun.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx *Store) error) error {
	return s.Conn.InTx(ctx, func(ctx context.Context, c db.Conn) error { return fn(ctx, &Store{c}) })
}

// Enqueue adds a notification to the outbox in the store's transaction.
func (s *Store) Enqueue(ctx context.Context, ev outbox.Event) error {
	return outbox.Enqueue(ctx, s.IDB, ev)
}

// AppendEvent adds an event to the live stream in the store's transaction.
func (s *Store) AppendEvent(ctx context.Context, ev streamevents.Event) error {
	return streamevents.Append(ctx, s.IDB, ev)
}

// loadRow is the persisted shape of a load. Carrier and driver are NULL until
// set, so that the partial visibility indexes stay small.
type loadRow struct {
	bun.BaseModel `bun:"table:logistics_loads"`

	ID                  string     `bun:"id,pk"`
	Reference           string     `bun:"reference"`
	OrganiserID         string     `bun:"organiser_id"`
	OrganiserName       string     `bun:"organiser_name"`
	CarrierID           *string    `bun:"carrier_id"`
	CarrierName         *string    `bun:"carrier_name"`
	DriverID            *string    `bun:"driver_id"`
	DriverName          *string    `bun:"driver_name"`
	CommodityID         int        `bun:"commodity_id"`
	CommodityName       string     `bun:"commodity_name"`
	WeightUnit          string     `bun:"weight_unit"`
	WeightConversion    float64    `bun:"weight_conversion"`
	DeliveryDate        time.Time  `bun:"delivery_date"`
	DeliveryDateISO     string     `bun:"delivery_date_iso"`
	PickupPostcode      string     `bun:"pickup_postcode"`
	DropoffPostcode     string     `bun:"dropoff_postcode"`
	Weight              *float64   `bun:"weight"`
	WeightNet           *float64   `bun:"weight_net"`
	VehicleRegistration string     `bun:"vehicle_registration"`
	TicketNumber        string     `bun:"ticket_number"`
	Status              string     `bun:"status"`
	Files               string     `bun:"files"`
	Tags                string     `bun:"tags"`
	Search              string     `bun:"search"`
	CreatorOrgID        string     `bun:"creator_org_id"`
	CreatedBy           string     `bun:"created_by"`
	CreatedAt           time.Time  `bun:"created_at"`
	UpdatedAt           time.Time  `bun:"updated_at"`
	CompletedAt         *time.Time `bun:"completed_at"`
}

// loadColumns are the columns a load is read from: everything but the search
// text, which only the WHERE clause needs.
var loadColumns = []string{
	"id", "reference", "organiser_id", "organiser_name", "carrier_id", "carrier_name", "driver_id", "driver_name",
	"commodity_id", "commodity_name", "weight_unit", "weight_conversion", "delivery_date", "delivery_date_iso",
	"pickup_postcode", "dropoff_postcode", "weight", "weight_net", "vehicle_registration", "ticket_number",
	"status", "files", "tags", "creator_org_id", "created_by", "created_at", "updated_at", "completed_at",
}

// mutableColumns are what an import row may change on an existing load.
var mutableColumns = []string{
	"organiser_name", "commodity_id", "commodity_name", "weight_unit", "weight_conversion", "delivery_date",
	"delivery_date_iso", "pickup_postcode", "dropoff_postcode", "weight", "weight_net", "vehicle_registration",
	"ticket_number", "tags", "search", "updated_at",
}

func toRow(l *Load) (*loadRow, error) {
	files, err := json.Marshal(nonNil(l.Files))
	if err != nil {
		return nil, err
	}
	tags, err := json.Marshal(nonNil(l.Tags))
	if err != nil {
		return nil, err
	}
	r := &loadRow{
		ID: l.ID, Reference: l.Reference, OrganiserID: l.Organiser.ID, OrganiserName: l.Organiser.Name,
		CommodityID: l.Commodity.ID, CommodityName: l.Commodity.Name, WeightUnit: l.Commodity.Unit,
		WeightConversion: l.Commodity.Conversion, DeliveryDate: l.DeliveryDate.UTC(), DeliveryDateISO: l.DeliveryDateISO,
		PickupPostcode: l.PickupPostcode, DropoffPostcode: l.DropoffPostcode, Weight: l.Weight, WeightNet: l.WeightNet,
		VehicleRegistration: l.VehicleRegistration, TicketNumber: l.TicketNumber, Status: string(l.Status),
		Files: string(files), Tags: string(tags), Search: l.SearchText(), CreatorOrgID: l.CreatorID, CreatedBy: l.CreatedBy,
		CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(), CompletedAt: utcPtr(l.CompletedAt),
	}
	if l.Carrier != nil {
		r.CarrierID, r.CarrierName = &l.Carrier.ID, &l.Carrier.Name
	}
	if l.Driver != nil {
		r.DriverID, r.DriverName = &l.Driver.ID, &l.Driver.Name
	}
	return r, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (r *loadRow) load() (*Load, error) {
	l := &Load{
		ID: r.ID, Reference: r.Reference, Organiser: Party{ID: r.OrganiserID, Name: r.OrganiserName},
		Commodity:    Commodity{ID: r.CommodityID, Name: r.CommodityName, Unit: r.WeightUnit, Conversion: r.WeightConversion},
		DeliveryDate: r.DeliveryDate.UTC(), DeliveryDateISO: r.DeliveryDateISO,
		PickupPostcode: r.PickupPostcode, DropoffPostcode: r.DropoffPostcode, Weight: r.Weight, WeightNet: r.WeightNet,
		VehicleRegistration: r.VehicleRegistration, TicketNumber: r.TicketNumber, Status: Status(r.Status),
		CreatorID: r.CreatorOrgID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), CompletedAt: utcPtr(r.CompletedAt),
	}
	if r.CarrierID != nil {
		l.Carrier = &Party{ID: *r.CarrierID, Name: deref(r.CarrierName)}
	}
	if r.DriverID != nil {
		l.Driver = &Party{ID: *r.DriverID, Name: deref(r.DriverName)}
	}
	if err := json.Unmarshal([]byte(r.Files), &l.Files); err != nil {
		return nil, fmt.Errorf("load %s files: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.Tags), &l.Tags); err != nil {
		return nil, fmt.Errorf("load %s tags: %w", r.ID, err)
	}
	return l, nil
}

func toLoads(rows []loadRow) ([]*Load, error) {
	out := make([]*Load, len(rows))
	for i := range rows {
		l, err := rows[i].load()
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

func toRows(loads []*Load) ([]*loadRow, error) {
	rows := make([]*loadRow, len(loads))
	for i, l := range loads {
		r, err := toRow(l)
		if err != nil {
			return nil, err
		}
		rows[i] = r
	}
	return rows, nil
}

// Insert writes new loads in one statement; a used key (creator, organiser,
// reference) fails it with a unique violation.
func (s *Store) Insert(ctx context.Context, loads []*Load) error {
	if len(loads) == 0 {
		return nil
	}
	rows, err := toRows(loads)
	if err != nil {
		return err
	}
	_, err = s.IDB.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// Upsert writes loads by key (creator, organiser, reference) in one statement:
// new keys are inserted, existing ones get the importable columns, except
// completed loads, which never change. It answers the ids of the rows written
// by key.
func (s *Store) Upsert(ctx context.Context, loads []*Load) (map[Key]string, error) {
	written := map[Key]string{}
	if len(loads) == 0 {
		return written, nil
	}
	rows, err := toRows(loads)
	if err != nil {
		return nil, err
	}
	q := s.IDB.NewInsert().Model(&rows).On("CONFLICT (creator_org_id, organiser_id, reference) DO UPDATE")
	for _, c := range mutableColumns {
		q = q.Set("? = EXCLUDED.?", bun.Ident(c), bun.Ident(c))
	}
	var got []struct {
		ID           string `bun:"id"`
		CreatorOrgID string `bun:"creator_org_id"`
		OrganiserID  string `bun:"organiser_id"`
		Reference    string `bun:"reference"`
	}
	err = q.Where("?TableAlias.status <> ?", string(StatusCompleted)).
		Returning("id, creator_org_id, organiser_id, reference").Scan(ctx, &got)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	for _, g := range got {
		written[Key{CreatorID: g.CreatorOrgID, OrganiserID: g.OrganiserID, Reference: g.Reference}] = g.ID
	}
	return written, nil
}

// handoffColumns are what hand-offs and proofs of delivery change.
var handoffColumns = []string{
	"carrier_id", "carrier_name", "driver_id", "driver_name", "weight_net", "vehicle_registration",
	"ticket_number", "status", "files", "search", "updated_at", "completed_at",
}

// Update writes the hand-off and proof-of-delivery columns of changed loads in
// one statement.
func (s *Store) Update(ctx context.Context, loads []*Load) error {
	if len(loads) == 0 {
		return nil
	}
	rows, err := toRows(loads)
	if err != nil {
		return err
	}
	_, err = s.IDB.NewUpdate().Model(&rows).Column(handoffColumns...).Bulk().Exec(ctx)
	return err
}

// ByIDs returns the loads with these ids that the viewer sees, in no order.
// forUpdate locks them (PostgreSQL) for a read-modify-write in db's transaction.
func (s *Store) ByIDs(ctx context.Context, v Viewer, ids []string, forUpdate bool) ([]*Load, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []loadRow
	q := s.IDB.NewSelect().Model(&rows).Column(loadColumns...).Where("id IN (?)", bun.List(ids))
	q = visible(q, v)
	if forUpdate && s.IDB.Dialect().Name() == dialect.PG {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return toLoads(rows)
}

// ByKeys returns the loads with these keys (creator, organiser, reference),
// whoever sees them. The keys are joined as a VALUES list so that each is one
// probe of the unique index, whatever the statistics say about the organiser
// (an import adds its rows faster than statistics follow).
func (s *Store) ByKeys(ctx context.Context, keys []Key) ([]*Load, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	args := make([]any, 0, 3*len(keys))
	for _, k := range keys {
		args = append(args, k.CreatorID, k.OrganiserID, k.Reference)
	}
	values := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(keys)), ", ")
	var rows []loadRow
	err := s.IDB.NewSelect().Model(&rows).Column(loadColumns...).
		Join("JOIN (VALUES "+values+") AS k ON ?TableAlias.creator_org_id = k.column1 AND ?TableAlias.organiser_id = k.column2 AND ?TableAlias.reference = k.column3", args...).
		Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return toLoads(rows)
}

// KeysTaken returns which of the keys are already used.
func (s *Store) KeysTaken(ctx context.Context, keys []Key) ([]Key, error) {
	found, err := s.ByKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]Key, len(found))
	for i, l := range found {
		out[i] = l.Key()
	}
	return out, nil
}

// visible keeps the loads the viewer sees; a viewer with no organisation and
// no user id sees nothing. The three arms each match one partial index.
func visible(q *bun.SelectQuery, v Viewer) *bun.SelectQuery {
	if len(v.Orgs) == 0 && v.UserID == "" {
		return q.Where("1 = 0")
	}
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		if len(v.Orgs) > 0 {
			q = q.WhereOr("organiser_id IN (?)", bun.List(v.Orgs)).WhereOr("carrier_id IN (?)", bun.List(v.Orgs))
		}
		if v.UserID != "" {
			q = q.WhereOr("driver_id = ?", v.UserID)
		}
		return q
	})
}

// sortColumns maps the API's sort fields to columns.
var sortColumns = map[string]string{
	SortDeliveryDate: "delivery_date",
	SortReference:    "reference",
	SortStatus:       "status",
	SortTicketNumber: "ticket_number",
	SortUpdated:      "updated_at",
}

// maxArmOrgs is how many organisations get arms of their own; a viewer with
// more (rare) gets one IN-list arm per role instead.
const maxArmOrgs = 8

// arm narrows a query to one part of what a viewer sees.
type arm func(q *bun.SelectQuery) *bun.SelectQuery

// arms splits what the viewer sees into disjoint parts that each match one
// index in (delivery_date, id) order: the loads each of its organisations
// organises, those each carries for someone else, and those it drives for
// neither. A page takes the first rows of each part and merges them, so a
// large organisation's first page reads 20 index entries instead of sorting
// every load it sees; counts add up index-only counts of the parts.
func arms(v Viewer) []arm {
	var out []arm
	groups := [][]string{}
	if len(v.Orgs) > maxArmOrgs {
		groups = append(groups, v.Orgs)
	} else {
		for _, o := range v.Orgs {
			groups = append(groups, []string{o})
		}
	}
	in := func(col string, g []string) (string, any) {
		if len(g) == 1 {
			return col + " = ?", g[0]
		}
		return col + " IN (?)", bun.List(g)
	}
	for _, g := range groups {
		cond, arg := in("organiser_id", g)
		out = append(out, func(q *bun.SelectQuery) *bun.SelectQuery { return q.Where(cond, arg) })
	}
	for _, g := range groups {
		cond, arg := in("carrier_id", g)
		out = append(out, func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where(cond, arg).Where("organiser_id NOT IN (?)", bun.List(v.Orgs))
		})
	}
	if v.UserID != "" {
		out = append(out, func(q *bun.SelectQuery) *bun.SelectQuery {
			q = q.Where("driver_id = ?", v.UserID)
			if len(v.Orgs) > 0 {
				q = q.Where("organiser_id NOT IN (?)", bun.List(v.Orgs)).
					Where("(carrier_id IS NULL OR carrier_id NOT IN (?))", bun.List(v.Orgs))
			}
			return q
		})
	}
	return out
}

// smallArm is the size under which an arm answers `query` by reading its own
// rows (in index order, filtered) rather than through the trigram index: the
// trigram index shines for rare text in many rows, but text whose trigrams are
// common ("farm", "ltd", a shared reference prefix) makes it read large
// posting lists, slower than filtering a few thousand rows.
var smallArm = 20000 // a variable so that tests can take the trigram path on small data

// filtered applies the search's filters (not the visibility). scanText asks
// for the text filter in a form no index answers (see smallArm).
func filtered(q *bun.SelectQuery, f Filter, scanText bool) *bun.SelectQuery {
	if f.From != nil {
		q = q.Where("delivery_date >= ?", f.From.UTC())
	}
	if f.To != nil {
		q = q.Where("delivery_date <= ?", f.To.UTC())
	}
	if f.UpdatedSince != nil {
		q = q.Where("updated_at > ?", f.UpdatedSince.UTC())
	}
	if f.OrganiserID != "" {
		q = q.Where("organiser_id = ?", f.OrganiserID)
	}
	if f.CarrierID != "" {
		q = q.Where("carrier_id = ?", f.CarrierID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if f.Text != "" {
		// The text is letters and digits only (NormaliseText): no LIKE wildcards
		// to escape. PostgreSQL answers it from the trigram index.
		if scanText {
			q = q.Where("(search || '') LIKE ?", "%"+f.Text+"%")
		} else {
			q = q.Where("search LIKE ?", "%"+f.Text+"%")
		}
	}
	return q
}

// textScans tells, per arm, whether it should filter the text by reading its
// rows: on PostgreSQL, with a text query, for arms under smallArm loads (an
// index-only count per arm, in one statement). Elsewhere it answers nil.
func (s *Store) textScans(ctx context.Context, as []arm, f Filter) ([]bool, error) {
	if f.Text == "" || len(as) == 0 || s.IDB.Dialect().Name() != dialect.PG {
		return nil, nil
	}
	parts := make([]string, len(as))
	args := make([]any, len(as))
	noText := f
	noText.Text = ""
	for i, a := range as {
		parts[i] = "(?)"
		args[i] = filtered(a(s.IDB.NewSelect().Model((*loadRow)(nil)).ColumnExpr("count(*)")), noText, false)
	}
	sizes := make([]int, len(as))
	dest := make([]any, len(as))
	for i := range sizes {
		dest[i] = &sizes[i]
	}
	if err := s.IDB.NewRaw("SELECT "+strings.Join(parts, ", "), args...).Scan(ctx, dest...); err != nil {
		return nil, err
	}
	out := make([]bool, len(as))
	for i, n := range sizes {
		out[i] = n < smallArm
	}
	return out, nil
}

// scan reports whether arm i filters text by reading its rows.
func scan(scans []bool, i int) bool { return scans != nil && scans[i] }

// order is the sort of a filter: its column, direction and keyset comparison.
func order(f Filter) (col, dir, after string) {
	col = sortColumns[f.SortBy]
	if col == "" {
		col = sortColumns[SortDeliveryDate]
	}
	if f.SortDesc {
		return col, "DESC", "<"
	}
	return col, "ASC", ">"
}

// count counts the loads the viewer sees that match the filter: the sum of
// the disjoint arms' counts, in one statement.
func (s *Store) count(ctx context.Context, v Viewer, f Filter, scans []bool) (int, error) {
	as := arms(v)
	if len(as) == 0 {
		return 0, nil
	}
	parts := make([]string, len(as))
	args := make([]any, len(as))
	for i, a := range as {
		parts[i] = "(?)"
		args[i] = filtered(a(s.IDB.NewSelect().Model((*loadRow)(nil)).ColumnExpr("count(*)")), f, scan(scans, i))
	}
	var total int
	err := s.IDB.NewRaw("SELECT "+strings.Join(parts, " + "), args...).Scan(ctx, &total)
	return total, err
}

// page reads limit rows from offset of the loads the viewer sees that match
// the filter, in its order, after the row after (keyset) when given. Every arm
// yields its first offset+limit rows; the merge sorts only those.
func (s *Store) page(ctx context.Context, v Viewer, f Filter, scans []bool, after *loadRow, limit, offset int) ([]loadRow, error) {
	as := arms(v)
	if len(as) == 0 {
		return nil, nil
	}
	col, dir, cmp := order(f)
	parts := make([]string, len(as))
	args := make([]any, 0, len(as)+3)
	for i, a := range as {
		q := filtered(a(s.IDB.NewSelect().Model((*loadRow)(nil)).Column(loadColumns...)), f, scan(scans, i))
		if after != nil {
			q = q.Where("(?, id) "+cmp+" (?, ?)", bun.Ident(col), sortValue(after, col), after.ID)
		}
		q = q.OrderExpr("? "+dir, bun.Ident(col)).OrderExpr("id " + dir).Limit(int64(offset + limit))
		parts[i] = fmt.Sprintf("SELECT * FROM (?) AS arm%d", i)
		args = append(args, q)
	}
	args = append(args, bun.Ident(col), limit, offset)
	var rows []loadRow
	query := "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + ") AS visible ORDER BY ? " + dir + ", id " + dir + " LIMIT ? OFFSET ?"
	if err := s.IDB.NewRaw(query, args...).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return rows, nil
}

// Search returns a page of the loads the viewer sees that match the filter,
// and how many match in all.
func (s *Store) Search(ctx context.Context, v Viewer, f Filter) ([]*Load, int, error) {
	scans, err := s.textScans(ctx, arms(v), f)
	if err != nil {
		return nil, 0, err
	}
	total, err := s.count(ctx, v, f, scans)
	if err != nil {
		return nil, 0, err
	}
	if total == 0 || f.Offset >= total {
		return []*Load{}, total, nil
	}
	rows, err := s.page(ctx, v, f, scans, nil, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, err
	}
	loads, err := toLoads(rows)
	return loads, total, err
}

// streamBatch is how many rows each keyset query of a stream reads.
const streamBatch = 500

// Stream calls fn with every load the viewer sees that matches the filter, in
// the filter's order, ignoring its limit and offset. It reads keyset batches,
// so memory stays flat at any size and no connection is held while fn writes
// to a slow client.
func (s *Store) Stream(ctx context.Context, v Viewer, f Filter, fn func(*Load) error) error {
	scans, err := s.textScans(ctx, arms(v), f)
	if err != nil {
		return err
	}
	var last *loadRow
	for {
		rows, err := s.page(ctx, v, f, scans, last, streamBatch, 0)
		if err != nil {
			return err
		}
		for i := range rows {
			l, err := rows[i].load()
			if err != nil {
				return err
			}
			if err := fn(l); err != nil {
				return err
			}
		}
		if len(rows) < streamBatch {
			return nil
		}
		last = &rows[len(rows)-1]
	}
}

func sortValue(r *loadRow, col string) any {
	switch col {
	case "reference":
		return r.Reference
	case "status":
		return r.Status
	case "ticket_number":
		return r.TicketNumber
	case "updated_at":
		return r.UpdatedAt.UTC()
	default:
		return r.DeliveryDate.UTC()
	}
}
