package idempotency

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/db"
	"github.com/uptrace/bun"
)

// The states of a key's row.
const (
	// stateRunning: claimed before the handler ran (a route without InTx);
	// lease_until is renewed while it runs.
	stateRunning = "running"
	// stateCommitted: claimed in the transaction of the change (a route with
	// InTx), so the change is made; the answer follows by lease_until, or it
	// was lost.
	stateCommitted = "committed"
	stateDone      = "done"
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
	st, err := k.prepared(ctx, &k.insertStmt, `INSERT INTO platform_idempotency
		(scope, request_hash, owner, state, status, header, body, lease_until, expires_at, created_at)
		VALUES ($1, $2, $3, 'running', 0, '', NULL, $4, $5, $6) ON CONFLICT (scope) DO NOTHING`)
	if err != nil {
		return false, err
	}
	res, err := st.ExecContext(ctx, scope, hash, owner, db.TimeArg(now.Add(k.o.Lease)), db.TimeArg(now.Add(k.o.TTL)), db.TimeArg(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// held tells whether a row holds the scope, in one prepared read.
func (k *Keeper) held(ctx context.Context, scope string) (bool, error) {
	st, err := k.prepared(ctx, &k.heldStmt, `SELECT 1 FROM platform_idempotency WHERE scope = $1`)
	if err != nil {
		return false, err
	}
	var one int
	switch err := st.QueryRowContext(ctx, scope).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// claim inserts the scope's row in tx, the transaction of the change (InTx):
// it commits with the change or not at all. A duplicate that claimed first
// (its row committed, or on PostgreSQL still uncommitted: the insert waits
// for it) makes this transaction fail with the 409 or 422 the row calls for.
//
// st is claimQuery prepared on the pool before the handler ran: preparing it
// here would wait for a free connection of the pool while this transaction
// holds one, and with every connection held by a transaction at this point
// (concurrent duplicates on PostgreSQL) none would ever come.
func (k *Keeper) claim(ctx context.Context, tx bun.Tx, st *sql.Stmt, scope, hash, owner string) error {
	now := k.now()
	res, err := tx.StmtContext(ctx, st).ExecContext(ctx, scope, hash, owner, db.TimeArg(now.Add(k.o.Lease)), db.TimeArg(now.Add(k.o.TTL)), db.TimeArg(now))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var other string
	if err := tx.NewSelect().Model((*record)(nil)).Column("request_hash").Where("scope = ?", scope).Scan(ctx, &other); err != nil {
		return err
	}
	if other != hash {
		counted.reused.Inc()
		return apierr.New(apierr.CodeIdempotencyKeyReused,
			"this Idempotency-Key was used with another request; use a new key for a new request")
	}
	counted.inFlight.Inc()
	return inFlight()
}

const claimQuery = `INSERT INTO platform_idempotency
	(scope, request_hash, owner, state, status, header, body, lease_until, expires_at, created_at)
	VALUES ($1, $2, $3, 'committed', 0, '', NULL, $4, $5, $6) ON CONFLICT (scope) DO NOTHING`

// keep inserts the answer of a request that wrote nothing (InTx routes),
// unless a duplicate's row came first.
func (k *Keeper) keep(ctx context.Context, scope, hash string, status int, header http.Header, body []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	if body == nil {
		body = []byte{}
	}
	now := k.now()
	r := &record{Scope: scope, RequestHash: hash, State: stateDone, Status: status, Header: string(h), Body: body,
		LeaseUntil: now, ExpiresAt: now.Add(k.o.TTL), CreatedAt: now}
	_, err = k.db.NewInsert().Model(r).On("CONFLICT (scope) DO NOTHING").Exec(ctx)
	return err
}

// prepared answers the statement of query, prepared once per pool: the two
// statements every request with a key runs (insert, finish) skip the SQL
// parse, which on SQLite is a good part of a small write. They bypass bun's
// query hooks (no span of their own; the request's span covers them).
func (k *Keeper) prepared(ctx context.Context, slot **sql.Stmt, query string) (*sql.Stmt, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if *slot != nil {
		return *slot, nil
	}
	st, err := k.db.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	*slot = st
	return st, nil
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
// changes nothing: the row is the new owner's. The expiry stays the one the
// insert set (idempotency.ttl from the start of the request): left alone, the
// expiry index is not written again.
func (k *Keeper) finish(ctx context.Context, scope, owner string, status int, header http.Header, body []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	if body == nil {
		body = []byte{}
	}
	st, err := k.prepared(ctx, &k.finishStmt, finishQuery)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, status, string(h), body, scope, owner)
	return err
}

// queue hands the answer of an InTx request, whose row committed with its
// change, to the next flush: one transaction writes the answers of every
// request of the last flushDelay, where each had a commit of its own. The
// answers waiting are replayed from here on this replica; another replica
// meanwhile answers 409 with Retry-After: 1 (the row is "committed" within
// its lease). A replica that dies first loses them: a retry answers 409 and
// never runs the change again, as when it dies before the answer is written
// at all.
func (k *Keeper) queue(scope, owner, hash string, status int, header http.Header, body []byte) {
	h, err := json.Marshal(header)
	if err != nil {
		k.o.Log.WithError(err).Error("idempotency: keeping the answer failed")
		return
	}
	if body == nil {
		body = []byte{}
	}
	a := &record{Scope: scope, Owner: owner, RequestHash: hash, State: stateDone, Status: status, Header: string(h), Body: body}
	k.amu.Lock()
	defer k.amu.Unlock()
	if k.waits == nil {
		k.waits = map[string]*record{}
	}
	k.waits[scope] = a
	switch {
	case len(k.waits) >= flushMax:
		go k.flush()
	case k.flushAt == nil:
		k.flushAt = time.AfterFunc(flushDelay, k.flush)
	}
}

// waiting answers the answer of scope waiting to be written, or nil.
func (k *Keeper) waiting(scope string) *record {
	k.amu.Lock()
	defer k.amu.Unlock()
	return k.waits[scope]
}

// flush writes the answers waiting, in one transaction. They stay in waits
// (replayed from there) until it has committed.
func (k *Keeper) flush() {
	k.amu.Lock()
	if k.flushAt != nil {
		k.flushAt.Stop()
		k.flushAt = nil
	}
	batch := make([]*record, 0, len(k.waits))
	for _, a := range k.waits {
		batch = append(batch, a)
	}
	k.amu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := k.finishAll(ctx, batch)
	if err != nil {
		// The changes are made; retries answer 409 (answerLost), never run them again.
		k.o.Log.WithError(err).WithField("answers", len(batch)).Error("idempotency: keeping the answers failed")
	}
	k.amu.Lock()
	for _, a := range batch {
		if k.waits[a.Scope] == a {
			delete(k.waits, a.Scope)
		}
	}
	k.amu.Unlock()
}

// finishAll keeps answers as finish does, in one transaction.
func (k *Keeper) finishAll(ctx context.Context, batch []*record) error {
	st, err := k.prepared(ctx, &k.finishStmt, finishQuery)
	if err != nil {
		return err
	}
	return db.InTx(ctx, k.db, func(ctx context.Context, tx bun.Tx) error {
		s := tx.StmtContext(ctx, st)
		for _, a := range batch {
			if _, err := s.ExecContext(ctx, a.Status, a.Header, a.Body, a.Scope, a.Owner); err != nil {
				return err
			}
		}
		return nil
	})
}

const finishQuery = `UPDATE platform_idempotency SET state = 'done', owner = '', status = $1, header = $2, body = $3
	WHERE scope = $4 AND owner = $5`

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
