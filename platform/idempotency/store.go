package idempotency

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"time"

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

// claim inserts the scope's row, with the request's answer (state done) or
// without (committed: the answer could not be kept), in tx, the transaction
// of the change, just before it commits. A row there already (on PostgreSQL
// a duplicate's still uncommitted: the insert waits for it) is answered as a
// *heldError, which rolls the change back; a row past its time is replaced.
//
// st is claimQuery prepared on the pool before the handler ran: preparing it
// here would wait for a free connection of the pool while this transaction
// holds one, and with every connection held by a transaction at this point
// (concurrent duplicates on PostgreSQL) none would ever come.
func (k *Keeper) claim(ctx context.Context, tx bun.Tx, st *sql.Stmt, scope, hash, state string, status int, header http.Header, body []byte) error {
	h, body, err := answerColumns(header, body)
	if err != nil {
		return err
	}
	s := tx.StmtContext(ctx, st)
	for attempt := 0; ; attempt++ {
		now := k.now()
		res, err := s.ExecContext(ctx, scope, hash, state, status, h, body, db.TimeArg(now), db.TimeArg(now.Add(k.o.TTL)), db.TimeArg(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		r := new(record)
		if err := tx.NewSelect().Model(r).Where("scope = ?", scope).Scan(ctx); err != nil {
			return err
		}
		if !r.claimable(now) || attempt > 0 {
			return &heldError{r}
		}
		if _, err := tx.NewDelete().Model((*record)(nil)).Where("scope = ?", scope).Exec(ctx); err != nil {
			return err
		}
	}
}

// heldError is the claim's answer when another request's row holds the key:
// the request answers what the row says (Keeper.answerBy).
type heldError struct{ r *record }

func (e *heldError) Error() string { return "idempotency: another request holds the key" }

// claimQuery inserts a claim's row; lease_until is its time of writing: a
// row without an answer (committed) is never waited for.
const claimQuery = `INSERT INTO platform_idempotency
	(scope, request_hash, owner, state, status, header, body, lease_until, expires_at, created_at)
	VALUES ($1, $2, '', $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (scope) DO NOTHING`

// keep inserts the answer of a request that wrote nothing (InTx routes),
// unless a duplicate's row came first.
func (k *Keeper) keep(ctx context.Context, scope, hash string, status int, header http.Header, body []byte) error {
	h, body, err := answerColumns(header, body)
	if err != nil {
		return err
	}
	now := k.now()
	r := &record{Scope: scope, RequestHash: hash, State: stateDone, Status: status, Header: h, Body: body,
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
	h, body, err := answerColumns(header, body)
	if err != nil {
		return err
	}
	st, err := k.prepared(ctx, &k.finishStmt, finishQuery)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, status, h, body, scope, owner)
	return err
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

// answerColumns are a kept answer's header and body as their columns store
// them: the header as JSON ("{}" when empty), the body never NULL.
func answerColumns(header http.Header, body []byte) (string, []byte, error) {
	if body == nil {
		body = []byte{}
	}
	if len(header) == 0 {
		return "{}", body, nil
	}
	h, err := json.Marshal(header)
	return string(h), body, err
}
