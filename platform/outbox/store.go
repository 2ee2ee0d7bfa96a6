package outbox

import (
	"context"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun"
)

// Every time below is passed from Go (never SQL now()), so that SQLite compares
// values of one text format and both dialects use the dispatcher's clock.

func insert(ctx context.Context, idb bun.IDB, rec *Record) error {
	_, err := idb.NewInsert().Model(rec).Exec(ctx)
	return err
}

// The claim takes up to n due, unclaimed (or expired-claim) pending events and
// leases them to owner until now+lease. On PostgreSQL FOR UPDATE SKIP LOCKED lets
// replicas claim side by side without waiting on or taking each other's rows;
// SQLite has one writer at a time, so the single UPDATE statement is the claim.
const (
	claimPG = `UPDATE platform_outbox SET claimed_until = ?, claimed_by = ?, attempts = attempts + 1
WHERE id IN (
  SELECT id FROM platform_outbox
  WHERE status = 'pending' AND due_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)
  ORDER BY due_at, id LIMIT ?
  FOR UPDATE SKIP LOCKED)
RETURNING *`
	claimSQLite = `UPDATE platform_outbox SET claimed_until = ?, claimed_by = ?, attempts = attempts + 1
WHERE id IN (
  SELECT id FROM platform_outbox
  WHERE status = 'pending' AND due_at <= ? AND (claimed_until IS NULL OR claimed_until < ?)
  ORDER BY due_at, id LIMIT ?)
RETURNING *`
)

func claim(ctx context.Context, bdb *bun.DB, owner string, now time.Time, lease time.Duration, n int) ([]Record, error) {
	q := claimSQLite
	if db.IsPostgres(bdb) {
		q = claimPG
	}
	var recs []Record
	if err := bdb.NewRaw(q, now.Add(lease), owner, now, now, n).Scan(ctx, &recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// finish stores the outcome of an attempt and ends the claim. It only touches
// the row while owner still holds it: when the lease ran out and another
// replica took the event, that replica's outcome wins (ok is false).
func finish(ctx context.Context, idb bun.IDB, rec *Record, owner string) (ok bool, err error) {
	res, err := idb.NewUpdate().Model(rec).
		Column("status", "due_at", "done_channels", "last_error", "delivered_at").
		Set("claimed_until = NULL").
		Where("id = ? AND claimed_by = ? AND status = ?", rec.ID, owner, StatusPending).
		Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// purge deletes delivered events older than before.
func purge(ctx context.Context, idb bun.IDB, before time.Time) (int64, error) {
	res, err := idb.NewDelete().Table("platform_outbox").
		Where("status = ? AND delivered_at < ?", StatusDelivered, before).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func list(ctx context.Context, idb bun.IDB, f Filter) ([]Record, error) {
	var recs []Record
	q := idb.NewSelect().Model(&recs).OrderExpr("created_at DESC, id DESC").Limit(int64(f.Limit))
	if f.Type != "" {
		q = q.Where("type = ?", f.Type)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, err
	}
	return recs, nil
}

func get(ctx context.Context, idb bun.IDB, id string) (*Record, error) {
	rec := new(Record)
	if err := idb.NewSelect().Model(rec).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, err
	}
	return rec, nil
}

// backlog answers how many events are pending and when the oldest was created.
func backlog(ctx context.Context, idb bun.IDB) (int64, time.Time, error) {
	n, err := idb.NewSelect().Model((*Record)(nil)).Where("status = ?", StatusPending).Count(ctx)
	if err != nil || n == 0 {
		return n, time.Time{}, err
	}
	var oldest Record
	err = idb.NewSelect().Model(&oldest).Column("created_at").Where("status = ?", StatusPending).
		OrderExpr("created_at").Limit(1).Scan(ctx)
	return n, oldest.CreatedAt, err
}
