package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// Group commit on SQLite.
//
// SQLite lets one writer in at a time, so InTx transactions pass a gate, one
// after the other (writeGate). Most of a short write's time at the gate was
// not its statements but its COMMIT: writing the pages it changed to the WAL
// (every index page an insert touches, again for each insert) and, every
// 1,000 WAL pages, the checkpoint's two fsyncs: half of the gate's time under
// a burst of listing creates, while the writers queued behind it waited.
// The checkpoints now run beside the writers (checkpoint.go).
//
// So the writers that meet at the gate share one transaction. Each runs its
// function in a savepoint of the open transaction, on its own goroutine, in
// the order they arrived; when the last one leaves and nobody is waiting (or
// the batch is full) it commits for all of them, and each writer's InTx
// answers once that COMMIT is done: nothing is acknowledged before it is
// durable, as before. A function that fails rolls back to its savepoint, so
// it undoes its own writes only, as its own transaction would have. The
// first writer of a transaction takes no savepoint (its failure rolls back a
// transaction that holds nothing else), so a writer alone at the gate pays
// nothing for the sharing; the savepoints of the others cost a copy of each
// page they change (the in-memory sub-journal), far less than the COMMITs
// they share.
//
// What could undo the others' work is kept out of the shared transaction:
//   - a statement interrupted by its request's cancelled context makes SQLite
//     roll back the whole transaction, so the functions run on a context
//     without cancellation; a request that ended meanwhile has its savepoint
//     rolled back after its function returns, and answers its context's error;
//   - a statement failing with OR ROLLBACK rolls back the transaction too: the
//     stores do not use it on SQLite.
// Should SQLite still roll back the transaction (an I/O error, a full disk),
// the savepoint it took is gone, which the writer finds when it releases or
// rolls back to it; every writer of the batch then answers that error, and
// nothing of the batch is kept.

// maxBatch bounds the writers that share one COMMIT, and so how long the
// first of them waits for the others (each holds the gate for its own
// statements only, a fraction of a millisecond for a create).
const maxBatch = 32

// writeGates holds, per SQLite database opened here, the gate its write
// transactions pass. SQLite lets one writer in; the others (every InTx begins
// IMMEDIATE) would wait in its busy handler, which polls with sleeps of up to
// 100 ms: under a burst of creates most of the time went to sleeping, and p99
// grew with it. Queued here instead, the next writer starts the moment the
// previous one leaves. Writers of other processes on the same file still meet
// busy_timeout, as before. The key is the connection pool, which the copies of
// a *bun.DB share (tracing wraps the DB in one).
var writeGates sync.Map // *sql.DB -> *writeGate

// writeGate is a SQLite database's gate: a first-in first-out queue of
// writers, the connection its transactions run on (one per copy of the
// *bun.DB: each has its own query hooks), and the transaction open for the
// writers at the gate (batch).
//
// One connection, because a connection's page cache is dropped whenever
// another connection wrote to the file since its last transaction: write
// transactions spread over the pool each started cold, reading again the
// pages of every index a create writes (a tenth of a create's CPU in a
// profile). The connections go back to the pool once no write used them for
// writeConnIdle, so that an idle or closing database holds none.
type writeGate struct {
	mu    sync.Mutex
	held  bool
	queue []chan struct{} // the waiting writers, each handed the gate on its channel

	// Only touched by the writer holding the gate.
	conns   map[*bun.DB]*bun.Conn
	batch   *batch
	lastUse time.Time
	idle    *time.Timer

	// Checkpoints (checkpoint.go): one is due after every COMMITs, sinceCkpt
	// of which ran since the last (sinceCkpt only touched by the holder);
	// checkpointing while one runs beside the writers.
	sinceCkpt     int
	every         atomic.Int64
	checkpointing atomic.Bool
	lastFrames    int // only touched by the checkpoint running

	// commits and writes count the COMMITs and the InTx transactions in them,
	// checkpoints the checkpoints beside the writers.
	commits, writes, checkpoints atomic.Uint64
}

// takeConn answers db's write connection, taking one from the pool (its
// automatic checkpoint off) when it holds none.
func (w *writeGate) takeConn(ctx context.Context, db *bun.DB) (*bun.Conn, error) {
	if c := w.conns[db]; c != nil {
		return c, nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint=0"); err != nil {
		_ = conn.Close()
		return nil, err
	}
	w.conns[db] = &conn
	return &conn, nil
}

// giveBack returns db's write connection to the pool, with SQLite's
// automatic checkpoint on again, as the pool's other connections have it.
func (w *writeGate) giveBack(db *bun.DB) {
	c := w.conns[db]
	if c == nil {
		return
	}
	delete(w.conns, db)
	_, _ = c.ExecContext(context.Background(), fmt.Sprintf("PRAGMA wal_autocheckpoint=%d", checkpointFrames))
	_ = c.Close()
}

// writeConnIdle is how long the write connections stay out of the pool
// without a write.
const writeConnIdle = time.Second

func newWriteGate() *writeGate {
	w := &writeGate{conns: map[*bun.DB]*bun.Conn{}}
	w.every.Store(1)
	return w
}

// gateOf answers db's write gate (nil for PostgreSQL, which runs writers side
// by side).
func gateOf(db *bun.DB) *writeGate {
	g, ok := writeGates.Load(db.DB)
	if !ok {
		return nil
	}
	return g.(*writeGate)
}

// acquire waits for the gate, in arrival order, until ctx ends.
func (w *writeGate) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	if !w.held {
		w.held = true
		w.mu.Unlock()
		return nil
	}
	turn := make(chan struct{}, 1)
	w.queue = append(w.queue, turn)
	w.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	for i, t := range w.queue {
		if t == turn {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			w.mu.Unlock()
			return ctx.Err()
		}
	}
	w.mu.Unlock()
	// Handed the gate as ctx ended: it may come with an open batch, which
	// must not wait for a writer that has left.
	<-turn
	w.leave()
	return ctx.Err()
}

// leave is the holder's way out: the gate, and the open batch with it, goes
// to the next writer waiting if the batch has room; otherwise the batch
// commits and the gate goes on, or is free.
//
// Before committing for nobody waiting, the holder yields its processor
// once: writers that are running toward the gate (their requests read and
// checked, on a processor this one shares) reach it meanwhile and join this
// COMMIT instead of paying for the next. Under 16 writers a COMMIT held 3.4
// of them on average, 8 with the yield: creates +14% a second, −9% CPU
// each, p99 −20%; a writer alone pays a yield that returns at once.
func (w *writeGate) leave() {
	w.touch()
	w.mu.Lock()
	if len(w.queue) == 0 && w.batch != nil && len(w.batch.members) > 0 {
		w.mu.Unlock()
		runtime.Gosched()
		w.mu.Lock()
	}
	if len(w.queue) > 0 && (w.batch == nil || len(w.batch.members) < maxBatch && !w.batch.broken()) {
		w.handOn()
		return
	}
	w.mu.Unlock()
	w.flush()
	w.release()
}

// release gives the gate to the first writer waiting, or frees it.
func (w *writeGate) release() {
	w.mu.Lock()
	if len(w.queue) > 0 {
		w.handOn()
		return
	}
	w.held = false
	w.mu.Unlock()
}

// handOn gives the gate to the first writer waiting; w.mu is held, and
// released.
func (w *writeGate) handOn() {
	next := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	w.mu.Unlock()
	next <- struct{}{}
}

// touch notes a use of the write connections, and arms the timer that gives
// them back once they stay unused.
func (w *writeGate) touch() {
	w.lastUse = time.Now()
	if w.idle == nil {
		w.idle = time.AfterFunc(writeConnIdle, w.releaseIfIdle)
	} else {
		w.idle.Reset(writeConnIdle)
	}
}

// releaseIfIdle gives the connections back unless a write used them within
// writeConnIdle (the timer may fire just as a writer resets it).
func (w *writeGate) releaseIfIdle() {
	_ = w.acquire(context.Background())
	w.flush()
	if time.Since(w.lastUse) >= writeConnIdle {
		for db := range w.conns {
			w.giveBack(db)
		}
	}
	w.release()
}

// batch is the transaction the writers at the gate share.
type batch struct {
	db   *bun.DB // the copy whose connection it runs on
	ctx  context.Context
	tx   bun.Tx
	conn *bun.Conn
	// members are the writers whose change it holds, each told the COMMIT's
	// outcome on its channel.
	members []chan error
	// lost is why SQLite no longer holds the transaction, once it does not.
	lost error
}

func (b *batch) broken() bool { return b.lost != nil }

// open answers the batch for a writer of db, beginning one if none is open
// (a batch on another copy of the DB commits first).
func (w *writeGate) open(ctx context.Context, db *bun.DB) (*batch, error) {
	if w.batch != nil && w.batch.db != db {
		w.flush()
	}
	if w.batch != nil {
		return w.batch, nil
	}
	c, err := w.takeConn(context.WithoutCancel(ctx), db)
	if err != nil {
		return nil, err
	}
	// Without cancellation: the transaction outlives the request that began
	// it, and database/sql would roll it back when that request's context
	// ended.
	bctx := context.WithoutCancel(ctx)
	tx, err := c.BeginTx(bctx, nil)
	if err != nil {
		w.forget(db, err)
		return nil, err
	}
	w.batch = &batch{db: db, ctx: bctx, tx: tx, conn: c}
	return w.batch, nil
}

// flush ends the open batch: COMMIT, or ROLLBACK when it holds no change or
// SQLite lost it; each member is told the outcome.
func (w *writeGate) flush() {
	b := w.batch
	if b == nil {
		return
	}
	w.batch = nil
	var err error
	switch {
	case b.lost != nil:
		_ = b.tx.Rollback()
		err = b.lost
	case len(b.members) == 0:
		err = b.tx.Rollback()
	default:
		err = b.tx.Commit()
		w.commits.Add(1)
		w.writes.Add(uint64(len(b.members)))
	}
	if err != nil {
		// A failed COMMIT may leave SQLite's transaction open on the
		// connection, which database/sql no longer tracks: end it, and let
		// the next writer take a fresh connection.
		_, _ = b.conn.ExecContext(b.ctx, "ROLLBACK")
		w.forget(b.db, driver.ErrBadConn)
	}
	for _, m := range b.members {
		m <- err
	}
	if err == nil && len(b.members) > 0 {
		w.afterCommit(b.db)
	}
}

// forget drops db's write connection after err, when err says it broke.
func (w *writeGate) forget(db *bun.DB, err error) {
	if !errors.Is(err, sql.ErrConnDone) && !errors.Is(err, driver.ErrBadConn) {
		return
	}
	w.giveBack(db)
}

// ErrWriteLost is the error of every writer whose change was in a shared
// SQLite transaction that SQLite rolled back (see batch): none of it was kept,
// through no fault of the request, which succeeds when repeated. IsUnavailable
// counts it (503 with Retry-After).
var ErrWriteLost = errors.New("the write transaction shared with other requests was rolled back, none of its changes kept")

// member is one writer's part of a batch: its savepoint.
type member struct {
	w    *writeGate
	b    *batch
	ctx  context.Context // the writer's, without cancellation
	done chan error
	// sp: the change is in a savepoint (others' changes came before it).
	sp bool
	// ended: end ran (the gate is left).
	ended bool
}

// savepoint is the one name every member's savepoint takes: RELEASE and
// ROLLBACK TO act on the innermost of that name, which is the member's own
// (the savepoints of a claim's nested transactions are named apart).
const savepoint = "w"

// enter waits for the gate and opens the writer's savepoint in the batch.
func (w *writeGate) enter(ctx context.Context, db *bun.DB) (*member, error) {
	if err := w.acquire(ctx); err != nil {
		return nil, err
	}
	b, err := w.open(ctx, db)
	if err != nil {
		w.leave()
		return nil, err
	}
	m := &member{w: w, b: b, ctx: context.WithoutCancel(ctx), sp: len(b.members) > 0}
	if !m.sp {
		// The first change of the transaction needs no savepoint: should it
		// fail, the whole transaction rolls back, and nobody else's is in it.
		// So a writer alone at the gate pays nothing for the sharing.
		return m, nil
	}
	if err := m.exec("SAVEPOINT " + savepoint); err != nil {
		m.ended = true
		w.leave()
		return nil, err
	}
	return m, nil
}

// exec runs a savepoint statement; an error means SQLite no longer holds the
// transaction (or the connection broke), and the batch is lost.
func (m *member) exec(q string) error {
	if _, err := (Conn{IDB: m.b.tx, pool: m.b.db}).ExecPrepared(m.ctx, q); err != nil {
		if m.b.lost == nil {
			m.b.lost = fmt.Errorf("%w: %w", ErrWriteLost, err)
		}
		return m.b.lost
	}
	return nil
}

// end releases the member's savepoint (keep) or rolls back to it, leaves the
// gate, and for a kept change waits for the batch's COMMIT, whose error it
// answers. Not keeping answers the error of the rollback, if any.
func (m *member) end(keep bool) error {
	if m.ended {
		return nil
	}
	m.ended = true
	var err error
	switch {
	case !m.sp && !keep:
		m.w.flush() // the transaction holds this change alone: ROLLBACK
	case m.sp && !keep:
		if err = m.exec("ROLLBACK TO " + savepoint); err == nil {
			err = m.exec("RELEASE " + savepoint)
		}
	case m.sp:
		err = m.exec("RELEASE " + savepoint)
		keep = err == nil
	}
	if keep {
		m.done = make(chan error, 1)
		m.b.members = append(m.b.members, m.done)
	}
	m.w.leave()
	if !keep {
		return err
	}
	return <-m.done
}
