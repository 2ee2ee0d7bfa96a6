package db

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
	"go.opentelemetry.io/otel/trace"
)

// Binder makes a bun query run as a prepared statement with bound parameters
// on SQLite. bun writes every argument into the SQL text, so each request is a
// new statement that SQLite parses and plans again: 15% of the CPU of a
// listing search in a profile. Values wrapped with Arg (or BindList) are
// written as "?" and collected in order instead, and a query run on Conn's
// Prepared connection executes a statement prepared once per text and pool
// connection (database/sql keeps it per connection), with the values bound.
// The nil Binder (PostgreSQL, or a caller that does not bind) writes the
// values into the text as bun does, so one query builder serves both.
//
// A placeholder is written "+?": SQLite's unary plus changes no value (nor
// its affinity) and leaves the term usable by an index, but it keeps the
// planner from reading the bound value against the index samples of ANALYZE
// (STAT4). A bare "?" in an index constraint makes SQLite re-prepare the
// statement whenever its value changes (12% of a search's CPU in a profile,
// as much as not preparing). The plan is then chosen on the statistics of
// sqlite_stat1 alone, the same for every value: bind the queries whose index
// does not depend on the values.
type Binder struct {
	args []any
	// inlined: a value of a type not bound here was written into the text;
	// the text then differs per value and is not worth preparing.
	inlined bool
}

// Arg answers v as a parameter of the query: a placeholder, with v bound when
// the query runs (bool, string, integer and float values; others are written
// into the text as bun writes them). On a nil Binder it answers v itself.
func (b *Binder) Arg(v any) any {
	if b == nil {
		return v
	}
	return param{b: b, v: v}
}

// BindList is bun.List of values, each bound as Arg binds it.
func BindList[T any](b *Binder, vs []T) any {
	if b == nil {
		return bun.List(vs)
	}
	return paramList[T]{b: b, vs: vs}
}

type param struct {
	b *Binder
	v any
}

// AppendQuery writes the placeholder and collects the value, in the order of
// the text. A query appended by a no-op generator (a tracing hook showing the
// template) collects nothing.
func (p param) AppendQuery(gen schema.QueryGen, dst []byte) ([]byte, error) {
	if gen.IsNop() {
		return append(dst, "+?"...), nil
	}
	switch p.v.(type) {
	case bool, string, int, int64, float64:
		p.b.args = append(p.b.args, p.v)
		return append(dst, "+?"...), nil
	}
	p.b.inlined = true
	return gen.Append(dst, p.v), nil
}

type paramList[T any] struct {
	b  *Binder
	vs []T
}

func (l paramList[T]) AppendQuery(gen schema.QueryGen, dst []byte) ([]byte, error) {
	if len(l.vs) == 0 {
		return append(dst, "NULL"...), nil // as bun.List writes an empty list
	}
	var err error
	for i, v := range l.vs {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		if dst, err = (param{b: l.b, v: v}).AppendQuery(gen, dst); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// Prepared answers the connection to run a query built with b on
// (bun's SelectQuery.Conn): on the pool, the statement of the query's text
// from the pool's cache, prepared at its first use; in a transaction, the
// query with its values bound. bun's query hooks (tracing) run as for any
// query. A nil b answers the Conn's own connection.
func (c Conn) Prepared(b *Binder) bun.IConn {
	switch idb := c.IDB.(type) {
	case nil:
	case *bun.DB:
		if b != nil {
			return &boundConn{IConn: idb.DB, b: b, stmts: stmtCacheOf(idb.DB)}
		}
		return idb.DB
	case bun.Tx:
		if b != nil {
			return &boundConn{IConn: idb.Tx, b: b}
		}
		return idb.Tx
	}
	return nil
}

// boundConn runs the one query of its Binder: bun hands it the text with the
// placeholders, it adds the values.
type boundConn struct {
	bun.IConn
	b     *Binder
	stmts *stmtCache
}

func (c *boundConn) QueryContext(ctx context.Context, query string, _ ...any) (*sql.Rows, error) {
	if c.stmts == nil || c.b.inlined {
		return c.IConn.QueryContext(ctx, query, c.b.args...)
	}
	st, err := c.stmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, c.b.args...)
}

// maxStmts bounds a pool's prepared statements: the shapes of the queries
// that bind (filters present, list lengths, page) are few in practice; past
// the bound the cache starts over rather than grow.
const maxStmts = 256

// stmtCache holds a pool's prepared statements by text.
type stmtCache struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

var stmtCaches sync.Map // *sql.DB -> *stmtCache

func stmtCacheOf(db *sql.DB) *stmtCache {
	if c, ok := stmtCaches.Load(db); ok {
		return c.(*stmtCache)
	}
	c, _ := stmtCaches.LoadOrStore(db, &stmtCache{db: db, stmts: map[string]*sql.Stmt{}})
	return c.(*stmtCache)
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	// Prepared outside the lock: database/sql prepares on one connection now
	// and on each other connection at its first use there.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts[query]; ok {
		_ = st.Close() // a concurrent first use prepared it too
		return prev, nil
	}
	if len(c.stmts) >= maxStmts {
		for q, old := range c.stmts {
			// A statement in use by a query closes once the query's rows do.
			_ = old.Close()
			delete(c.stmts, q)
		}
	}
	c.stmts[query] = st
	return st, nil
}

// ExecPrepared runs query, SQLite text with ? placeholders, with args on c:
// prepared once per pool connection (the pool's statement cache, as for
// Prepared), within c's transaction when c is bound to one (the cached
// statement bound to it, which database/sql keeps prepared per connection).
// For the hottest writes, whose text bun would make anew with every value in
// it (a listing's insert: parsing it was 13% of a create's CPU). SQLite only:
// its writers pass the write gate one at a time, so while one of them
// prepares, the pool has a connection free for it.
//
// In a request whose span records (a sampled trace) the statement runs as a
// bun raw query on the pool, so that bun's query hooks give it its span, a
// child of the request's, as they do bun's own statements; the span shows
// the text with its placeholders, never the values. Other requests skip the
// hooks: with tracing off or the trace not sampled they would record nothing.
func (c Conn) ExecPrepared(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := stmtCacheOf(c.pool.DB).get(ctx, query)
	if err != nil {
		return nil, err
	}
	if tx, ok := c.IDB.(bun.Tx); ok {
		st = tx.StmtContext(ctx, st)
	}
	if trace.SpanFromContext(ctx).IsRecording() {
		return c.pool.NewRaw(query).Conn(stmtConn{st: st, args: args}).Exec(ctx)
	}
	return st.ExecContext(ctx, args...)
}

// stmtConn runs a prepared statement with its arguments whatever text bun
// hands it: bun's text is the statement's own (a raw query without
// arguments is written as given).
type stmtConn struct {
	st   *sql.Stmt
	args []any
}

func (c stmtConn) ExecContext(ctx context.Context, _ string, _ ...any) (sql.Result, error) {
	return c.st.ExecContext(ctx, c.args...)
}

func (c stmtConn) QueryContext(ctx context.Context, _ string, _ ...any) (*sql.Rows, error) {
	return c.st.QueryContext(ctx, c.args...)
}

func (c stmtConn) QueryRowContext(ctx context.Context, _ string, _ ...any) *sql.Row {
	return c.st.QueryRowContext(ctx, c.args...)
}

// TimeArg is t as bun writes a time: UTC text with microseconds. A statement
// that binds its own arguments (ExecPrepared, the idempotency keeper) passes
// times through it, so that on SQLite, where times are text, its rows read,
// compare and sort with those bun wrote; PostgreSQL reads it as the same
// timestamptz.
func TimeArg(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.999999-07:00") }
