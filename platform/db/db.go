// Package db opens the database (PostgreSQL through pgdialect, or embedded SQLite
// through sqlitedialect and the pure-Go modernc driver) and runs every module's
// migrations, each module with its own migrations table.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"go.opentelemetry.io/otel/trace"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// Options tune the connection pool.
type Options struct {
	MaxOpenConns int
}

// IsPostgresDSN tells whether dsn names a PostgreSQL server.
func IsPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// SQLiteDSN returns the DSN of the embedded database file in dataDir.
func SQLiteDSN(dataDir string) string {
	return "sqlite://" + filepath.Join(dataDir, "agritrade.db")
}

// Open connects to dsn: postgres:// or postgresql:// for PostgreSQL, sqlite://PATH
// (or a bare file path) for SQLite. It pings before returning.
func Open(ctx context.Context, dsn string, o Options) (*bun.DB, error) {
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 20
	}
	var (
		db  *bun.DB
		err error
	)
	if IsPostgresDSN(dsn) {
		db = openPostgres(dsn, o)
	} else {
		db, err = openSQLite(dsn)
		if err != nil {
			return nil, err
		}
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err = db.PingContext(pingCtx)
		// Replicas start in any number at once. On a new SQLite file the
		// first connection of each switches it to WAL, and a switch that
		// meets another process's can answer SQLITE_BUSY at once, without
		// the busy handler (SQLite's deadlock avoidance): try again for as
		// long as the ping may take.
		if err == nil || !isSQLiteBusy(err) || pingCtx.Err() != nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return db, nil
}

func openPostgres(dsn string, o Options) *bun.DB {
	connector := pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(10*time.Second),
		pgdriver.WithResetSessionFunc(checkAlive))
	sqldb := sql.OpenDB(connector)
	sqldb.SetMaxOpenConns(o.MaxOpenConns)
	sqldb.SetMaxIdleConns(o.MaxOpenConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	return bun.NewDB(sqldb, pgdialect.New())
}

// busyTimeout is how long an SQLite connection waits for a lock another
// holds before it answers SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// walSizeLimit is SQLite's journal_size_limit: the WAL file is truncated to
// it in the first COMMIT after the WAL starts afresh. That truncate holds the
// write lock, so it is only a bound for a process that never stops writing;
// the gate cuts the file back while idle (truncateIdle, walKeepBytes).
const walSizeLimit = 1 << 30

// openSQLite opens the file in WAL mode with a busy timeout, so readers never
// block the writer and concurrent writers wait instead of failing.
func openSQLite(dsn string) (*bun.DB, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "sqlite:")
	if path == "" {
		return nil, errors.New("sqlite DSN has no file path")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	q := url.Values{}
	// busy_timeout comes first: switching a new file to WAL needs a lock that
	// another process opening it at the same moment may hold.
	// temp_store(MEMORY): the statement journal of a write inside a
	// transaction (every index an INSERT touches) and sorter spills stay in
	// memory; on disk they cost a pwrite per page, 14% of a listing create's
	// CPU in a profile. The WAL file is cut back after a burst while idle
	// (truncateIdle); journal_size_limit only bounds it (walSizeLimit).
	// wal_autocheckpoint stays SQLite's 1,000 pages on the pool's
	// connections; the write connections of InTx take none and checkpoint
	// beside the writers instead (checkpoint.go). (At
	// 10,000 pages a listing create cost 15% less CPU but the p99 of creates
	// at a fixed rate went from 8 to 40 ms, the sync of a large checkpoint in
	// a COMMIT; checkpoints on a timer beside the requests, every 50 to 200
	// ms, did no better: 16 to 30 ms.) The page cache stays SQLite's
	// 2 MB: 32 MB (what the benchmark's peers set) read fewer pages per
	// create (8 instead of 12) but saved no measurable CPU (workload C A/B
	// 6x10 s: B/A 1.017, L 0.995), and a create sent with an Idempotency-Key
	// then cost +17% over one without, against +3% with 2 MB. No
	// mmap_size either: reading pages from a map of the file cost 5 to 14%
	// less CPU per search around a point (workload L), creates unchanged,
	// but each of the pool's connections maps the file on its own, and the
	// kernel counts a page in RSS once per map: 100 MB of RSS became 840
	// (a 124 MB database), which the OOM killer and RSS alerts would see.
	for _, p := range []string{fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()), "journal_mode(WAL)", "foreign_keys(ON)", "synchronous(NORMAL)",
		"temp_store(MEMORY)", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit)} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	pinAllocatorPages() // sqlitemem.go
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// One writer at a time is SQLite's model; a small pool serves concurrent readers.
	sqldb.SetMaxOpenConns(8)
	// Keep them all: database/sql keeps 2 idle by default, so under load the
	// others were closed and opened again, each opening reading the schema
	// (17% of a listing create's CPU in a profile).
	sqldb.SetMaxIdleConns(8)
	bdb := bun.NewDB(sqldb, sqlitedialect.New())
	file := path
	if path == ":memory:" {
		file = ""
	}
	writeGates.Store(bdb.DB, newWriteGate(file))
	return bdb, nil
}

// IsPostgres tells whether db speaks PostgreSQL.
func IsPostgres(db bun.IDB) bool { return db.Dialect().Name() == dialect.PG }

// InTx runs fn in a transaction, rolling back when it returns an error. What
// fn registers with AfterCommit (on the ctx it receives) runs once the
// transaction has committed.
//
// On SQLite the writers that meet at the write gate share one transaction,
// each fn in a savepoint of its own, and one COMMIT (see batch.go): InTx
// answers once that COMMIT is done, and fn's ctx carries no cancellation (a
// request that ends meanwhile has its change rolled back after fn returns,
// and InTx answers its context's error). fn may run on the goroutine of
// another writer, the gate's holder, which runs the functions of the writers
// queued behind it: fn must not depend on the goroutine it runs on
// (runtime.LockOSThread) nor wait for anything its caller's goroutine would
// do; a panic in fn is raised again in its caller's InTx (TxPanic).
//
// On a context with a Claim (WithClaim) the first transaction that succeeds
// does not commit here: it waits, open (on SQLite holding the write gate),
// for the claim's Commit, which writes the claim's row in it and commits
// both; InTx answers nil meanwhile. Later InTx calls of the same request run
// in it as savepoints.
func InTx(ctx context.Context, db *bun.DB, fn func(ctx context.Context, tx bun.Tx) error) error {
	run := fn
	if span := trace.SpanFromContext(ctx); span.SpanContext().IsValid() {
		// bun hands fn the context of its BEGIN query, whose span (with
		// tracing on) would parent every statement of the transaction and
		// the trace context an outbox event stores: keep the caller's span
		// current instead, so both are children of the request.
		run = func(txCtx context.Context, tx bun.Tx) error { return fn(trace.ContextWithSpan(txCtx, span), tx) }
	}
	cl, _ := ctx.Value(claimKey{}).(*Claim)
	if cl != nil && cl.open != nil {
		return cl.open.nested(ctx, run)
	}
	if cl != nil && cl.done {
		cl = nil // Commit or Abort ran: an ordinary transaction
	}
	h := &commitHooks{db: db}
	if w := gateOf(db); w != nil {
		return inBatch(ctx, w, db, h, cl, run)
	}
	if cl != nil {
		return cl.begin(ctx, db, h, run)
	}
	err := db.RunInTx(context.WithValue(ctx, commitHooksKey{}, h), nil, func(ctx context.Context, tx bun.Tx) error {
		if err := run(ctx, tx); err != nil {
			return err
		}
		// What fn registered with BeforeCommit runs after fn, in the same
		// transaction, as its last statements before the COMMIT.
		return h.runBefore(ctx)
	})
	if err != nil {
		return err
	}
	h.run()
	return nil
}

// inBatch is InTx on SQLite: fn in a savepoint of the transaction the writers
// at the gate share, run by whoever holds the gate (submit); under a claim by
// the writer itself, which keeps the gate until the claim's Commit or Abort.
func inBatch(ctx context.Context, w *writeGate, db *bun.DB, h *commitHooks, cl *Claim, run func(context.Context, bun.Tx) error) error {
	if cl == nil {
		j := &job{ctx: ctx, db: db, h: h, run: run, done: make(chan error, 1)}
		err := w.submit(j)
		if j.panicked != nil {
			panic(j.panicked)
		}
		if err != nil {
			return err
		}
		h.run()
		return nil
	}
	m, err := w.enter(ctx, db)
	if err != nil {
		return err
	}
	mctx := context.WithValue(m.ctx, commitHooksKey{}, h)
	returned := false
	defer func() {
		if !returned {
			_ = m.end(false) // fn panicked: undo its writes, leave the gate
		}
	}()
	err = run(mctx, m.b.tx)
	returned = true
	if err == nil {
		err = ctx.Err() // the request ended meanwhile: its change is not kept
	}
	if err != nil {
		return withRollback(err, m.end(false))
	}
	// The claim's Commit runs the BeforeCommit functions and ends it.
	cl.open = &openTx{ctx: mctx, tx: m.b.tx, hooks: h, end: m.end}
	return nil
}

// withRollback is err, joined with the error of the rollback after it if
// that failed too (err itself otherwise, so that callers may compare it).
func withRollback(err, rerr error) error {
	if rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

type claimKey struct{}

// Claim is a write that commits with the change a request makes, in its
// transaction, after the request has answered: platform/idempotency's key
// row, which holds that answer. The first transaction the request opens
// through InTx stays open when its function returns (later ones of the
// request run in it); Commit writes the claim's row and commits, Abort rolls
// the change back. A request so writes its change and its kept answer in one
// commit, or neither. A Claim belongs to one request (one goroutine).
type Claim struct {
	open *openTx
	// done: Commit or Abort ran; later transactions are ordinary ones.
	done bool
}

// openTx is a claim's transaction waiting for Commit.
type openTx struct {
	ctx   context.Context // the transaction's, with its commit hooks
	tx    bun.Tx
	hooks *commitHooks
	// end commits (keep) or rolls back the change, answering the error of
	// either.
	end func(keep bool) error
	n   int // savepoints made
}

// WithClaim answers ctx carrying a new claim (see Claim).
func WithClaim(ctx context.Context) (context.Context, *Claim) {
	cl := &Claim{}
	return context.WithValue(ctx, claimKey{}, cl), cl
}

// Open tells whether a change waits for Commit.
func (c *Claim) Open() bool { return c.open != nil }

// begin opens the claim's transaction on PostgreSQL.
func (c *Claim) begin(ctx context.Context, db *bun.DB, h *commitHooks, run func(context.Context, bun.Tx) error) error {
	tctx := context.WithValue(ctx, commitHooksKey{}, h)
	tx, err := db.BeginTx(tctx, nil)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok { // fn failed or panicked
			_ = tx.Rollback()
		}
	}()
	if err := run(tctx, tx); err != nil {
		return err
	}
	ok = true
	c.open = &openTx{ctx: tctx, tx: tx, hooks: h, end: func(keep bool) error {
		if keep {
			return tx.Commit()
		}
		return tx.Rollback()
	}}
	return nil
}

// nested runs fn in a savepoint of the open transaction: an error undoes
// fn's writes only, as a transaction of its own would have.
func (o *openTx) nested(ctx context.Context, fn func(context.Context, bun.Tx) error) error {
	o.n++
	sp := fmt.Sprintf("claim_%d", o.n)
	if _, err := o.tx.ExecContext(o.ctx, "SAVEPOINT "+sp); err != nil {
		return err
	}
	if err := fn(context.WithValue(ctx, commitHooksKey{}, o.hooks), o.tx); err != nil {
		if _, rerr := o.tx.ExecContext(o.ctx, "ROLLBACK TO SAVEPOINT "+sp); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	_, err := o.tx.ExecContext(o.ctx, "RELEASE SAVEPOINT "+sp)
	return err
}

// Commit runs write (the claim's row) in the open transaction, then what was
// registered with BeforeCommit, and commits; then the AfterCommit functions
// run. An error rolls everything back and is the answer. Without an open
// transaction (the request wrote nothing) Commit does nothing.
func (c *Claim) Commit(write func(ctx context.Context, tx bun.Tx) error) error {
	o := c.open
	c.open, c.done = nil, true
	if o == nil {
		return nil
	}
	err := write(o.ctx, o.tx)
	if err == nil {
		err = o.hooks.runBefore(o.ctx)
	}
	if err != nil {
		return withRollback(err, o.end(false))
	}
	if err := o.end(true); err != nil {
		return err
	}
	o.hooks.run()
	return nil
}

// Abort rolls back the change waiting for Commit, if any.
func (c *Claim) Abort() {
	o := c.open
	c.open, c.done = nil, true
	if o != nil {
		_ = o.end(false)
	}
}

// Conn is what a store runs its queries on: the pool, or within InTx one
// transaction. A store embeds it, so that the store owns its transactions and
// the services that use it speak only of what they do.
type Conn struct {
	// IDB runs the queries: the pool, or the transaction.
	bun.IDB
	pool *bun.DB
}

// NewConn is the Conn of the pool.
func NewConn(pool *bun.DB) Conn { return Conn{IDB: pool, pool: pool} }

// InTx runs fn with a Conn bound to one transaction of the pool (InTx: the
// SQLite write gate, the hooks after the commit); an error from fn rolls it
// back.
func (c Conn) InTx(ctx context.Context, fn func(ctx context.Context, tx Conn) error) error {
	return InTx(ctx, c.pool, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, Conn{IDB: tx, pool: c.pool})
	})
}

type commitHooksKey struct{}

// commitHooks are the functions waiting for one InTx transaction to commit
// (fns) or to be about to (before, with the keys already registered).
type commitHooks struct {
	db     *bun.DB
	mu     sync.Mutex
	fns    []func()
	before []func(ctx context.Context) error
	keys   map[any]bool
}

// runBefore runs the BeforeCommit functions in the order they were
// registered, including those registered meanwhile; the first error is the
// transaction's (it rolls back).
func (h *commitHooks) runBefore(ctx context.Context) error {
	for i := 0; ; i++ {
		h.mu.Lock()
		if i >= len(h.before) {
			h.before = nil
			h.mu.Unlock()
			return nil
		}
		fn := h.before[i]
		h.mu.Unlock()
		if err := fn(ctx); err != nil {
			return err
		}
	}
}

func (h *commitHooks) run() {
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// TxDB answers the database of the InTx transaction that ctx belongs to (nil
// outside one): what a commit hook tells apart when one process holds several
// databases (tests run many servers at once).
func TxDB(ctx context.Context) *bun.DB {
	if h, ok := ctx.Value(commitHooksKey{}).(*commitHooks); ok {
		return h.db
	}
	return nil
}

// AfterCommit runs fn once the InTx transaction that ctx belongs to has
// committed, and never if it rolls back: the place for what must not happen
// before the change is visible (waking the outbox dispatcher). Outside InTx fn
// runs at once, as a statement outside a transaction commits by itself.
func AfterCommit(ctx context.Context, fn func()) {
	if h, ok := ctx.Value(commitHooksKey{}).(*commitHooks); ok {
		h.mu.Lock()
		h.fns = append(h.fns, fn)
		h.mu.Unlock()
		return
	}
	fn()
}

// BeforeCommit registers fn to run at the end of the InTx transaction that
// ctx belongs to, after the function InTx was given has returned without
// error and before the COMMIT; an error from fn rolls the transaction back
// and is InTx's answer. It is the place for a write that must hold a lock for
// as short a time as possible: a lock taken there is held for the last
// statements and the COMMIT only, never while the rest of the change waits on
// row locks (platform/events takes the lock that orders event ids there). A
// non-nil key registers fn once per transaction: a later registration with
// the same key is ignored (a lock taken once for several writes). Functions
// run in the order of their registration, with the ctx of the transaction.
// Outside InTx nothing is registered and BeforeCommit answers false: the
// caller writes at once.
func BeforeCommit(ctx context.Context, key any, fn func(ctx context.Context) error) bool {
	h, ok := ctx.Value(commitHooksKey{}).(*commitHooks)
	if !ok {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if key != nil {
		if h.keys[key] {
			return true
		}
		if h.keys == nil {
			h.keys = map[any]bool{}
		}
		h.keys[key] = true
	}
	h.before = append(h.before, fn)
	return true
}
