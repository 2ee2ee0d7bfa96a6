package idempotency

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/uptrace/bun"
)

// The states of a key's row.
const (
	stateRunning = "running"
	stateDone    = "done"
)

// record is a row of platform_idempotency.
type record struct {
	bun.BaseModel `bun:"table:platform_idempotency"`

	Scope       string    `bun:"scope,pk"`
	RequestHash string    `bun:"request_hash"`
	Owner       string    `bun:"owner"`
	State       string    `bun:"state"`
	Status      int       `bun:"status"`
	Header      string    `bun:"header"`
	Body        []byte    `bun:"body"`
	LeaseUntil  time.Time `bun:"lease_until"`
	ExpiresAt   time.Time `bun:"expires_at"`
	CreatedAt   time.Time `bun:"created_at"`
}

// claimable tells whether a row may be taken over: its request died without
// a sign of life for a whole lease, or its answer is past its time and waits
// for the purge.
func (r *record) claimable(now time.Time) bool {
	return now.After(r.ExpiresAt) || (r.State == stateRunning && now.After(r.LeaseUntil))
}

// insert claims the scope with a running row; false when a row is there.
func (k *Keeper) insert(ctx context.Context, scope, hash, owner string, now time.Time) (bool, error) {
	r := &record{Scope: scope, RequestHash: hash, Owner: owner, State: stateRunning,
		LeaseUntil: now.Add(k.o.Lease), ExpiresAt: now.Add(k.o.TTL), CreatedAt: now}
	res, err := k.db.NewInsert().Model(r).On("CONFLICT (scope) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// get reads the scope's row; nil when there is none.
func (k *Keeper) get(ctx context.Context, scope string) (*record, error) {
	r := new(record)
	err := k.db.NewSelect().Model(r).Where("scope = ?", scope).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// takeOver claims a row found claimable, unless another request claimed it
// first (the condition is checked again in the UPDATE).
func (k *Keeper) takeOver(ctx context.Context, scope, hash, owner string, now time.Time) (bool, error) {
	res, err := k.db.NewUpdate().Model((*record)(nil)).
		Set("request_hash = ?", hash).Set("owner = ?", owner).Set("state = ?", stateRunning).
		Set("status = 0").Set("header = ''").Set("body = NULL").
		Set("lease_until = ?", now.Add(k.o.Lease)).Set("expires_at = ?", now.Add(k.o.TTL)).Set("created_at = ?", now).
		Where("scope = ?", scope).
		WhereGroup(" AND ", func(q *bun.UpdateQuery) *bun.UpdateQuery {
			return q.Where("expires_at < ?", now).
				WhereOr("state = ? AND lease_until < ?", stateRunning, now)
		}).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// renew moves the lease of a running row this request owns.
func (k *Keeper) renew(ctx context.Context, scope, owner string) error {
	_, err := k.db.NewUpdate().Model((*record)(nil)).Set("lease_until = ?", k.now().Add(k.o.Lease)).
		Where("scope = ? AND owner = ? AND state = ?", scope, owner, stateRunning).Exec(ctx)
	return err
}

// finish keeps the answer. A request taken over meanwhile (it lost its lease)
// changes nothing: the row is the new owner's.
func (k *Keeper) finish(ctx context.Context, scope, owner string, status int, header http.Header, body []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	if body == nil {
		body = []byte{}
	}
	_, err = k.db.NewUpdate().Model((*record)(nil)).
		Set("state = ?", stateDone).Set("owner = ''").Set("status = ?", status).Set("header = ?", string(h)).Set("body = ?", body).
		Set("expires_at = ?", k.now().Add(k.o.TTL)).
		Where("scope = ? AND owner = ?", scope, owner).Exec(ctx)
	return err
}

// release deletes the row of a request whose answer is not kept, so that a
// retry runs again.
func (k *Keeper) release(ctx context.Context, scope, owner string) error {
	_, err := k.db.NewDelete().Model((*record)(nil)).Where("scope = ? AND owner = ?", scope, owner).Exec(ctx)
	return err
}

// Purge deletes the answers older than the TTL (and rows of requests that
// died and were never retried). Every replica runs it; a row another replica
// deleted first is simply not there.
func (k *Keeper) Purge(ctx context.Context) (int64, error) {
	res, err := k.db.NewDelete().Model((*record)(nil)).Where("expires_at < ?", k.now()).Exec(ctx)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
