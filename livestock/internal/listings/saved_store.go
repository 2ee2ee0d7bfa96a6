package listings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/events"
	"github.com/agritrade/api/platform/outbox"
	"github.com/uptrace/bun"
)

// The store's side of the saved searches and their alerts: the tables
// livestock_saved_searches, livestock_saved_search_cells (the index a new
// listing finds its candidate searches by), livestock_saved_search_alerts (one
// row per alerted (search, listing)) and livestock_alert_queue (listings
// waiting to be matched). saved.go and alerts.go say what they mean.

type savedSearchRow struct {
	bun.BaseModel `bun:"table:livestock_saved_searches,alias:s"`

	ID        string    `bun:"id,pk"`
	UserID    string    `bun:"user_id,notnull"`
	Orgs      string    `bun:"orgs,notnull"` // JSON array: the owner's organisations (viewer of the filter)
	Name      string    `bun:"name,notnull"`
	Query     string    `bun:"query,notnull"` // the query as URL-encoded search parameters
	Body      string    `bun:"body,notnull"`  // the query object as sent (JSON), answered back
	CreatedAt time.Time `bun:"created_at,notnull"`
}

type savedCellRow struct {
	bun.BaseModel `bun:"table:livestock_saved_search_cells,alias:c"`

	Kind     string `bun:"kind,pk"`
	Type     string `bun:"type,pk"`
	Breed    string `bun:"breed,pk"`
	Cell     int    `bun:"cell,pk"`
	SearchID string `bun:"search_id,pk"`
}

type alertRow struct {
	bun.BaseModel `bun:"table:livestock_saved_search_alerts,alias:al"`

	SearchID  string    `bun:"search_id,pk"`
	ListingID string    `bun:"listing_id,pk"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// alertQueueRow is a listing waiting to be matched.
type alertQueueRow struct {
	bun.BaseModel `bun:"table:livestock_alert_queue,alias:q"`

	ListingID string    `bun:"listing_id,pk"`
	QueuedAt  time.Time `bun:"queued_at,notnull"`
}

// insertChunk bounds the rows of one multi-row insert (the drivers' limits
// on bound parameters).
const insertChunk = 1000

// CountSavedSearches answers how many saved searches userID keeps.
func (s *Store) CountSavedSearches(ctx context.Context, userID string) (int, error) {
	n, err := s.IDB.NewSelect().Model((*savedSearchRow)(nil)).Where("user_id = ?", userID).Count(ctx)
	return int(n), err
}

// InsertSavedSearches writes saved searches and their index keys, in chunks
// of multi-row inserts (one search when created, many in the benchmarks).
func (s *Store) InsertSavedSearches(ctx context.Context, rows []savedSearchRow, keys []savedCellRow) error {
	for start := 0; start < len(rows); start += insertChunk {
		chunk := rows[start:min(start+insertChunk, len(rows))]
		if _, err := s.IDB.NewInsert().Model(&chunk).Exec(ctx); err != nil {
			return err
		}
	}
	for start := 0; start < len(keys); start += insertChunk {
		chunk := keys[start:min(start+insertChunk, len(keys))]
		if _, err := s.IDB.NewInsert().Model(&chunk).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// SavedSearches answers a page of userID's saved searches, newest first, and the total.
func (s *Store) SavedSearches(ctx context.Context, userID string, limit, offset int) ([]savedSearchRow, int, error) {
	var rows []savedSearchRow
	q := s.IDB.NewSelect().Model(&rows).Where("user_id = ?", userID)
	total, err := q.Count(ctx)
	if err != nil {
		return nil, 0, err
	}
	if err := q.OrderExpr("created_at DESC, id DESC").Limit(int64(limit)).Offset(int64(offset)).Scan(ctx); err != nil {
		return nil, 0, err
	}
	return rows, int(total), nil
}

// DeleteSavedSearch removes userID's saved search id with its index keys and
// alerts; false when userID keeps no search of that id.
func (s *Store) DeleteSavedSearch(ctx context.Context, userID, id string) (bool, error) {
	res, err := s.IDB.NewDelete().Model((*savedSearchRow)(nil)).Where("id = ? AND user_id = ?", id, userID).Exec(ctx)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	// SQLite enforces the foreign keys' cascades too, but say it here for both.
	for _, m := range []any{(*savedCellRow)(nil), (*alertRow)(nil)} {
		if _, err := s.IDB.NewDelete().Model(m).Where("search_id = ?", id).Exec(ctx); err != nil {
			return false, err
		}
	}
	return true, nil
}

// AnySavedSearch tells whether any saved search is indexed at all.
func (s *Store) AnySavedSearch(ctx context.Context) (bool, error) {
	return s.IDB.NewSelect().Model((*savedCellRow)(nil)).Exists(ctx)
}

// savedKey is what a listing finds its candidate searches by: its kind, type
// and breed, and its grid cells (each with the "any" key beside it).
type savedKey struct {
	Kind, Type, Breed string
	Cells             []int
}

// SavedSearchCandidates answers the saved searches of users other than
// notUserID indexed under k or under "any".
func (s *Store) SavedSearchCandidates(ctx context.Context, k savedKey, notUserID string) ([]savedSearchRow, error) {
	var cands []savedSearchRow
	ids := s.IDB.NewSelect().Model((*savedCellRow)(nil)).Column("c.search_id").
		Where("c.kind IN (?)", bun.List([]string{k.Kind, anyKey})).
		Where("c.type IN (?)", bun.List([]string{k.Type, anyKey})).
		Where("c.breed IN (?)", bun.List([]string{k.Breed, anyKey})).
		Where("c.cell IN (?)", bun.List(k.Cells))
	q := s.IDB.NewSelect().Model(&cands).Where("s.id IN (?)", ids).Where("s.user_id <> ?", notUserID)
	var err error
	if s.pg {
		// PostgreSQL would hash-join the candidates with a scan of every saved
		// search (it prices a thousand key probes above one pass over 100,000
		// rows, which then costs tens of ms). A LATERAL sub-select with a LIMIT
		// is never flattened into a join: each candidate is one probe of the key.
		one := s.IDB.NewSelect().Model((*savedSearchRow)(nil)).ColumnExpr("s.*").
			Where("s.id = c.search_id").Where("s.user_id <> ?", notUserID).Limit(1)
		err = s.IDB.NewSelect().ColumnExpr("s.*").
			TableExpr("(SELECT DISTINCT c.search_id FROM (?) AS c) AS c", ids).
			Join("CROSS JOIN LATERAL (?) AS s", one).Scan(ctx, &cands)
	} else {
		err = q.Scan(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("saved search candidates: %w", err)
	}
	return cands, nil
}

// savedTest is one saved search to test a listing against: its filter as its
// owner sees it.
type savedTest struct {
	SearchID string
	Viewer   Viewer
	Filter   Filter
}

// MatchingSearches answers the ids of the tests the listing passes, in one
// statement over the listing's one row: per test, the search's own WHERE
// (Store.where) as one column of the select list. One plan for the row
// instead of one sub-select per test keeps the statement cheap to plan: a
// UNION ALL of 100 sub-selects cost PostgreSQL ~0.6 ms of planning per test,
// most of a new listing's matching with 100,000 saved searches.
func (s *Store) MatchingSearches(ctx context.Context, listingID string, tests []savedTest) ([]string, error) {
	if len(tests) == 0 {
		return nil, nil
	}
	// where's conditions as bun renders them after this prefix, values
	// inlined (safe: bun quotes them), to be used as one expression.
	prefix := s.IDB.NewSelect().Model((*listingRow)(nil)).ColumnExpr("1").String() + " WHERE "
	cols := make([]string, len(tests))
	args := make([]any, 0, len(tests)+1)
	for i, t := range tests {
		q := s.IDB.NewSelect().Model((*listingRow)(nil)).ColumnExpr("1")
		s.where(q, t.Viewer, t.Filter, noFacet)
		cond, ok := strings.CutPrefix(q.String(), prefix)
		if !ok {
			return nil, fmt.Errorf("match saved searches: unexpected statement %.100s", q.String())
		}
		cols[i] = "?"
		args = append(args, bun.Safe("CASE WHEN "+cond+" THEN 1 ELSE 0 END"))
	}
	args = append(args, listingID)
	passed := make([]int, len(tests))
	dest := make([]any, len(tests))
	for i := range passed {
		dest[i] = &passed[i]
	}
	err := s.IDB.NewRaw("SELECT "+strings.Join(cols, ", ")+" FROM livestock_listings AS l WHERE l.id = ?", args...).Scan(ctx, dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // the listing is gone: it matches nothing
	}
	if err != nil {
		return nil, fmt.Errorf("match saved searches: %w", err)
	}
	var hits []string
	for i, ok := range passed {
		if ok == 1 {
			hits = append(hits, tests[i].SearchID)
		}
	}
	return hits, nil
}

// RecordAlerts writes the alerts not recorded yet (a (search, listing) pair
// is alerted once) and answers the search ids of those it wrote.
func (s *Store) RecordAlerts(ctx context.Context, rows []alertRow) ([]string, error) {
	var fresh []string
	for start := 0; start < len(rows); start += 500 {
		part := rows[start:min(start+500, len(rows))]
		var got []string
		if err := s.IDB.NewInsert().Model(&part).On("CONFLICT (search_id, listing_id) DO NOTHING").
			Returning("search_id").Scan(ctx, &got); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		fresh = append(fresh, got...)
	}
	return fresh, nil
}

// EnqueueAll adds notifications to the outbox in the store's transaction.
func (s *Store) EnqueueAll(ctx context.Context, evs []outbox.Event) error {
	return outbox.EnqueueAll(ctx, s.IDB, evs)
}

// AppendEvents adds events to the live stream in the store's transaction.
func (s *Store) AppendEvents(ctx context.Context, evs []events.Event) error {
	return events.AppendAll(ctx, s.IDB, evs)
}

// QueueAlert queues a listing that has just become active for the
// saved-search alerts runner (once: a queued listing stays queued). On SQLite
// the statement is prepared once per connection (every create runs it; bun's
// text of it, parsed each time, was 6% of a create's CPU in a profile).
func (s *Store) QueueAlert(ctx context.Context, listingID string, at time.Time) error {
	if s.bunWrites() {
		_, err := s.IDB.NewInsert().Model(&alertQueueRow{ListingID: listingID, QueuedAt: at}).
			On("CONFLICT (listing_id) DO NOTHING").Exec(ctx)
		return err
	}
	_, err := s.ExecPrepared(ctx, queueAlertQuery, listingID, db.TimeArg(at))
	return err
}

// queueAlertQuery is QueueAlert's statement on SQLite.
const queueAlertQuery = "INSERT INTO livestock_alert_queue (listing_id, queued_at) VALUES (?, ?) ON CONFLICT (listing_id) DO NOTHING"

// QueuedAlerts answers up to limit queued listings' ids in id order (the
// queue's key: migration 0009). The runner drains the queue each pass, so
// the order only has to be stable.
func (s *Store) QueuedAlerts(ctx context.Context, limit int) ([]string, error) {
	var ids []string
	err := s.IDB.NewSelect().Model((*alertQueueRow)(nil)).Column("q.listing_id").
		OrderExpr("q.listing_id").Limit(int64(limit)).Scan(ctx, &ids)
	return ids, err
}

// DequeueAlerts removes listings from the alerts queue.
func (s *Store) DequeueAlerts(ctx context.Context, listingIDs []string) error {
	_, err := s.IDB.NewDelete().Model((*alertQueueRow)(nil)).Where("listing_id IN (?)", bun.List(listingIDs)).Exec(ctx)
	return err
}
