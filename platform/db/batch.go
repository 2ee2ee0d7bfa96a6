package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
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
// So the writers that meet at the gate share one transaction. Each function
// runs in a savepoint of the open transaction, in the order the writers
// arrived: the writer handed the gate runs its own, then those of the writers
// queued behind it (leave), so that a writer waiting is woken once, with its
// outcome; when nobody is waiting (or the batch is full) the holder commits
// for all of them, and each writer's InTx answers once that COMMIT is done:
// nothing is acknowledged before it is durable, as before. A writer with a
// claim (Claim) runs its function itself, as it keeps the gate after it. A
// function that fails rolls back to its savepoint, so
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
	queue []*waiter // the writers waiting, first come first served

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
	lastFrames    int    // only touched by the checkpoint running
	file          dbFile // synced before the checkpoint that holds the gate

	// commits and writes count the COMMITs and the InTx transactions in them,
	// checkpoints the checkpoints beside the writers, truncates the WAL
	// files cut back while idle.
	commits, writes, checkpoints, truncates atomic.Uint64
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
	_, _ = c.ExecContext(context.Background(), fmt.Sprintf("PRAGMA wal_autocheckpoint=%d", sqliteAutoCheckpoint))
	_ = c.Close()
}

// writeConnIdle is how long the write connections stay out of the pool
// without a write.
const writeConnIdle = time.Second

// newWriteGate answers the gate of the database file at path ("" for an
// in-memory database).
func newWriteGate(path string) *writeGate {
	w := &writeGate{conns: map[*bun.DB]*bun.Conn{}, file: dbFile{path: path, fd: -1}}
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
	wt := &waiter{turn: make(chan struct{}, 1)}
	w.queue = append(w.queue, wt)
	w.mu.Unlock()
	select {
	case <-wt.turn:
		return nil
	case <-ctx.Done():
	}
	if w.dequeue(wt) {
		return ctx.Err()
	}
	// Handed the gate as ctx ended: it may come with an open batch, which
	// must not wait for a writer that has left.
	<-wt.turn
	w.leave()
	return ctx.Err()
}

// dequeue takes wt out of the queue, answering false when it is no longer
// there (handed the gate, or its job taken).
func (w *writeGate) dequeue(wt *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, t := range w.queue {
		if t == wt {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			return true
		}
	}
	return false
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
//
// A writer waiting with a job (see submit) is not handed the gate: the holder
// runs its job, and goes on with the next, until the batch is full or nobody
// waits. Waking each writer to run its own statements and hand the gate on
// cost every write two goroutine switches in the gate's time, ~10 µs of the
// ~130 each write held it under 16 writers.
func (w *writeGate) leave() {
	w.touch()
	for {
		w.mu.Lock()
		if len(w.queue) == 0 && w.batch != nil && len(w.batch.members) > 0 {
			w.mu.Unlock()
			runtime.Gosched()
			w.mu.Lock()
		}
		if len(w.queue) == 0 || w.batch != nil && (len(w.batch.members) >= maxBatch || w.batch.broken()) {
			w.mu.Unlock()
			w.flush()
			w.release()
			return
		}
		if w.queue[0].job == nil {
			w.handOn()
			return
		}
		next := w.pop()
		w.mu.Unlock()
		w.runJob(next.job)
	}
}

// pop takes the first writer waiting off the queue; w.mu is held.
func (w *writeGate) pop() *waiter {
	next := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	return next
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
	next := w.pop()
	w.mu.Unlock()
	next.turn <- struct{}{}
}

// waiter is a writer waiting at the gate: handed the gate on turn, unless it
// brought a job, which the holder may run for it instead.
type waiter struct {
	turn chan struct{}
	job  *job
}

// job is an InTx without a claim, as a holder of the gate runs it (submit).
type job struct {
	ctx context.Context // the writer's
	db  *bun.DB
	h   *commitHooks
	run func(context.Context, bun.Tx) error
	// done gets the outcome once: run's error (nothing kept), or the
	// COMMIT's.
	done chan error
	// panicked is what run panicked with, re-raised on the writer's goroutine.
	panicked *TxPanic
}

// TxPanic is a panic of an InTx function on SQLite, raised again in the
// goroutine that called InTx: the function may have run on the goroutine of
// another writer at the gate, whose Stack it names.
type TxPanic struct {
	Value any
	Stack []byte
}

func (p *TxPanic) Error() string { return fmt.Sprint(p.Value) }

// PanicStack is the stack of the goroutine the function panicked on, which
// the error middleware logs instead of its own.
func (p *TxPanic) PanicStack() []byte { return p.Stack }

// Unwrap answers the panic's value when it is an error.
func (p *TxPanic) Unwrap() error { err, _ := p.Value.(error); return err }

// errPanicked is the outcome of a job that panicked (job.panicked says how).
var errPanicked = errors.New("the write transaction's function panicked")

// submit runs j: at once when the gate is free, or by the holder of the gate
// (leave), or by the writer itself if it is handed the gate; it answers j's
// outcome: its error, or once it is kept, the COMMIT's.
func (w *writeGate) submit(j *job) error {
	if err := j.ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	if w.held {
		wt := &waiter{turn: make(chan struct{}, 1), job: j}
		w.queue = append(w.queue, wt)
		w.mu.Unlock()
		select {
		case <-wt.turn: // handed the gate: it runs its job itself
		case err := <-j.done:
			return err
		case <-j.ctx.Done():
			return w.abandon(wt)
		}
	} else {
		w.held = true
		w.mu.Unlock()
	}
	w.runJob(j)
	w.leave()
	return <-j.done
}

// abandon is submit's way out for a writer whose context ended while it
// waited: out of the queue, or, when the holder took its job (it finds the
// context ended) or handed it the gate, that job's outcome; the batch must
// not wait for a writer that has left.
func (w *writeGate) abandon(wt *waiter) error {
	j := wt.job
	if w.dequeue(wt) {
		return j.ctx.Err()
	}
	select {
	case <-wt.turn:
		w.leave()
		return j.ctx.Err()
	case err := <-j.done:
		return err
	}
}

// runJob runs j for the holder of the gate, in a savepoint of the batch (see
// enter): kept, j waits for the COMMIT as a member; otherwise its outcome is
// told at once.
func (w *writeGate) runJob(j *job) {
	if err := j.ctx.Err(); err != nil {
		j.done <- err
		return
	}
	m, err := w.join(j.ctx, j.db)
	if err != nil {
		j.done <- err
		return
	}
	mctx := context.WithValue(m.ctx, commitHooksKey{}, j.h)
	err = j.call(mctx, m.b.tx)
	if err == nil {
		err = j.h.runBefore(mctx)
	}
	if err == nil {
		err = j.ctx.Err() // the request ended meanwhile: its change is not kept
	}
	if err != nil {
		_, rerr := m.finish(false)
		j.done <- withRollback(err, rerr)
		return
	}
	if kept, err := m.finish(true); !kept {
		j.done <- err
		return
	}
	m.b.members = append(m.b.members, j.done)
}

// call runs j's function, turning a panic into errPanicked (j.panicked).
func (j *job) call(ctx context.Context, tx bun.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			j.panicked = &TxPanic{Value: p, Stack: debug.Stack()}
			err = errPanicked
		}
	}()
	return j.run(ctx, tx)
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
// writeConnIdle (the timer may fire just as a writer resets it), and copies
// what the WAL still holds back into the database (checkpointIdle).
func (w *writeGate) releaseIfIdle() {
	_ = w.acquire(context.Background())
	w.flush()
	var idle *bun.DB
	if time.Since(w.lastUse) >= writeConnIdle {
		for db := range w.conns {
			idle = db
			w.giveBack(db)
		}
	}
	due := idle != nil && w.sinceCkpt > 0
	if due {
		w.sinceCkpt = 0
	}
	w.release()
	if due && w.checkpointing.CompareAndSwap(false, true) {
		w.checkpointIdle(idle)
	}
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
	m, err := w.join(ctx, db)
	if err != nil {
		w.leave()
		return nil, err
	}
	return m, nil
}

// join opens a writer's savepoint in the batch, for the holder of the gate.
func (w *writeGate) join(ctx context.Context, db *bun.DB) (*member, error) {
	b, err := w.open(ctx, db)
	if err != nil {
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
	keep, err := m.finish(keep)
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

// finish releases the member's savepoint (keep) or rolls back to it, without
// leaving the gate; kept tells whether the change stays in the batch.
func (m *member) finish(keep bool) (kept bool, err error) {
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
	return keep, err
}
