package db

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

type noHook struct{}

func (noHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (noHook) AfterQuery(context.Context, *bun.QueryEvent)                        {}

func openGated(t *testing.T) (*bun.DB, *writeGate) {
	t.Helper()
	bdb, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "gate.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	if _, err := bdb.ExecContext(context.Background(), "CREATE TABLE rows (n INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return bdb, gateOf(bdb)
}

// rowsOf answers the n of every committed row, in order.
func rowsOf(t *testing.T, bdb *bun.DB) []int {
	t.Helper()
	got := []int{}
	if err := bdb.NewSelect().Table("rows").Column("n").Order("n").Scan(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// writer is one InTx of a batch test: it inserts n; fail, cancel and panic
// make it fail after the insert, end its context there, or panic there.
type writer struct {
	n                    int
	fail, cancel, panics bool
	err                  error
	hooked               bool
	// panicked is what the writer's InTx raised; goroutine the goroutine
	// its function ran on.
	panicked  any
	goroutine string
}

// goroutineID answers the calling goroutine's id, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// waitQueued waits until n writers wait at the gate.
func waitQueued(t *testing.T, w *writeGate, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		queued := len(w.queue)
		w.mu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writers wait at the gate, want %d", queued, n)
		}
	}
}

// meetAtTheGate holds the gate while the writers queue behind it, in order,
// then lets them through and waits for all of them: they meet as a burst of
// requests does.
func meetAtTheGate(t *testing.T, bdb *bun.DB, w *writeGate, ws []*writer) {
	t.Helper()
	if err := w.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, wr := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					wr.panicked = p
					wr.err = fmt.Errorf("panicked: %v", p)
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wr.err = InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
				wr.goroutine = goroutineID()
				AfterCommit(ctx, func() { wr.hooked = true })
				if _, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (?)", wr.n); err != nil {
					return err
				}
				switch {
				case wr.panics:
					panic("writer panics")
				case wr.cancel:
					// The request ends while a statement runs. The statement
					// must run to its end: interrupted, it would make SQLite
					// roll back the transaction the others share.
					time.AfterFunc(10*time.Millisecond, cancel)
					_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) SELECT max(x) + 1000000 FROM "+
						"(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT x FROM c)")
					cancel()
					return err
				case wr.fail:
					return errors.New("writer fails")
				}
				return nil
			})
		}()
		waitQueued(t, w, i+1) // in this order, before the next one starts
	}
	w.release()
	wg.Wait()
}

// TestGroupCommit_200_WritersAtTheGateShareOneCommit: the writers that meet at
// the gate commit in one COMMIT, each change and each AfterCommit kept. The
// writer handed the gate runs the functions of those queued behind it itself,
// on its goroutine, instead of waking each to run its own.
func TestGroupCommit_200_WritersAtTheGateShareOneCommit(t *testing.T) {
	bdb, w := openGated(t)
	commits, writes := w.commits.Load(), w.writes.Load()
	ws := make([]*writer, 10)
	for i := range ws {
		ws[i] = &writer{n: i + 1}
	}
	meetAtTheGate(t, bdb, w, ws)
	for _, wr := range ws {
		if wr.err != nil || !wr.hooked {
			t.Fatalf("writer %d: %v, AfterCommit ran %v", wr.n, wr.err, wr.hooked)
		}
		if wr.goroutine == "" || wr.goroutine != ws[0].goroutine {
			t.Fatalf("writer %d ran on goroutine %q, the first writer (handed the gate) on %q", wr.n, wr.goroutine, ws[0].goroutine)
		}
	}
	wantOneCommit(t, bdb, w, commits, writes, 10)
}

// wantOneCommit fails t unless the table holds n rows and they came in one
// COMMIT since the gate counted commits and writes.
func wantOneCommit(t *testing.T, bdb *bun.DB, w *writeGate, commits, writes uint64, n int) {
	t.Helper()
	if got := rowsOf(t, bdb); len(got) != n {
		t.Fatalf("rows %v, want 1 to %d", got, n)
	}
	if c, k := w.commits.Load()-commits, w.writes.Load()-writes; c != 1 || k != uint64(n) {
		t.Fatalf("%d COMMITs for %d writes, want 1 for %d", c, k, n)
	}
}

// TestGroupCommit_200_AWriterOnItsWayJoinsTheCommit: on one processor, a
// writer whose function starts another writer leaves the gate with nobody
// waiting yet; the other is runnable, on its way to the gate. The yield
// before the COMMIT lets it arrive, and both share one COMMIT (without the
// yield the first commits alone: two).
func TestGroupCommit_200_AWriterOnItsWayJoinsTheCommit(t *testing.T) {
	bdb, w := openGated(t)
	insert := func(ctx context.Context, n int) error {
		return InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (?)", n)
			return err
		})
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ctx := context.Background()
	commits, writes := w.commits.Load(), w.writes.Load()
	second := make(chan error, 1)
	err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
		go func() { second <- insert(context.Background(), 2) }()
		_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (1)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	wantOneCommit(t, bdb, w, commits, writes, 2)
}

// TestGroupCommit_200_AFullBatchCommitsAndTheNextGoesOn: past maxBatch writers
// the open transaction commits and the rest share the next.
func TestGroupCommit_200_AFullBatchCommitsAndTheNextGoesOn(t *testing.T) {
	bdb, w := openGated(t)
	commits := w.commits.Load()
	ws := make([]*writer, maxBatch+5)
	for i := range ws {
		ws[i] = &writer{n: i + 1}
	}
	meetAtTheGate(t, bdb, w, ws)
	for _, wr := range ws {
		if wr.err != nil {
			t.Fatalf("writer %d: %v", wr.n, wr.err)
		}
	}
	if got := rowsOf(t, bdb); len(got) != maxBatch+5 {
		t.Fatalf("%d rows, want %d", len(got), maxBatch+5)
	}
	if c := w.commits.Load() - commits; c != 2 {
		t.Fatalf("%d COMMITs, want 2 (%d writers, at most %d in one)", c, maxBatch+5, maxBatch)
	}
}

// TestGroupCommit_500_AFailingWriterUndoesOnlyItsOwn: a writer that fails, or
// panics, or whose request ends inside its function, keeps nothing and runs
// no AfterCommit; the others' changes commit. The first writer of a
// transaction (no savepoint) and later ones (a savepoint each) alike.
func TestGroupCommit_500_AFailingWriterUndoesOnlyItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failed func(*writer)
	}{
		{"fails", func(wr *writer) { wr.fail = true }},
		{"panics", func(wr *writer) { wr.panics = true }},
		{"context ends", func(wr *writer) { wr.cancel = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bdb, w := openGated(t)
			ws := make([]*writer, 6)
			for i := range ws {
				ws[i] = &writer{n: i + 1}
			}
			tc.failed(ws[0]) // the first: no savepoint
			tc.failed(ws[3]) // in a savepoint
			meetAtTheGate(t, bdb, w, ws)
			for _, wr := range ws {
				failed := wr.fail || wr.panics || wr.cancel
				if failed && (wr.err == nil || wr.hooked) || !failed && (wr.err != nil || !wr.hooked) {
					t.Fatalf("writer %d (failing %v): %v, AfterCommit ran %v", wr.n, failed, wr.err, wr.hooked)
				}
				if wr.cancel && !errors.Is(wr.err, context.Canceled) {
					t.Fatalf("writer %d: %v, want its context's error", wr.n, wr.err)
				}
				// A panic reaches the writer's own InTx, whichever
				// goroutine ran its function.
				if p, ok := wr.panicked.(*TxPanic); wr.panics && (!ok || p.Value != "writer panics" || len(p.Stack) == 0) {
					t.Fatalf("writer %d raised %#v, want a *TxPanic of its value and stack", wr.n, wr.panicked)
				}
			}
			if got := fmt.Sprint(rowsOf(t, bdb)); got != "[2 3 5 6]" {
				t.Fatalf("rows %s, want [2 3 5 6]", got)
			}
			// The gate and the connection are free for the next write.
			if err := InTx(context.Background(), bdb, func(ctx context.Context, tx bun.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (7)")
				return err
			}); err != nil || len(rowsOf(t, bdb)) != 5 {
				t.Fatalf("the next write: %v, rows %v", err, rowsOf(t, bdb))
			}
		})
	}
}

// TestGroupCommit_503_ALostTransactionKeepsNothing: when SQLite rolls the
// shared transaction back under the writers (here one runs ROLLBACK itself,
// as an I/O error or a full disk would make SQLite do), none of the writers
// of that transaction is told its change was kept, and none of it is; the
// next transaction starts afresh.
func TestGroupCommit_503_ALostTransactionKeepsNothing(t *testing.T) {
	bdb, w := openGated(t)
	if err := w.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = InTx(context.Background(), bdb, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (?)", i+1); err != nil {
					return err
				}
				if i == 2 {
					_, err := tx.ExecContext(ctx, "ROLLBACK")
					return err
				}
				return nil
			})
		}()
		waitQueued(t, w, i+1)
	}
	w.release()
	wg.Wait()
	for i, err := range errs[:3] {
		if !errors.Is(err, ErrWriteLost) || !IsUnavailable(err) {
			t.Fatalf("writer %d of the lost transaction: %v; want ErrWriteLost, unavailable (503)", i+1, err)
		}
	}
	// The fourth came after the loss, in a transaction of its own.
	if errs[3] != nil {
		t.Fatalf("writer 4: %v", errs[3])
	}
	if got := fmt.Sprint(rowsOf(t, bdb)); got != "[4]" {
		t.Fatalf("rows %s, want [4]", got)
	}
}

// TestWriteGate_504_AWriterThatCannotWaitLeavesTheQueue: a writer whose
// context ends while it waits leaves the queue, with its context's error;
// the others are not held up. A copy of the DB with a query hook (as tracing
// makes) waits at the same gate.
func TestWriteGate_504_AWriterThatCannotWaitLeavesTheQueue(t *testing.T) {
	bdb, w := openGated(t)
	traced := bdb.WithQueryHook(noHook{})
	if err := w.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := InTx(short, traced, func(context.Context, bun.Tx) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the copy passed the gate the DB holds: %v", err)
	}
	w.mu.Lock()
	queued := len(w.queue)
	w.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d writers queued after the only one left", queued)
	}
	w.release()
	if err := InTx(context.Background(), traced, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (1)")
		return err
	}); err != nil || len(rowsOf(t, bdb)) != 1 {
		t.Fatalf("the copy after the gate was released: %v", err)
	}
}

// TestWriteGate_WritesOnOneConnection: InTx transactions on SQLite run on one
// connection (a TEMP table, which only its connection sees, is there from one
// to the next), also after a request ended inside its transaction; idle, the
// connection goes back to the pool.
func TestWriteGate_WritesOnOneConnection(t *testing.T) {
	bdb, w := openGated(t)
	ctx := context.Background()
	exec := func(ctx context.Context, q string) error {
		return InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		})
	}
	if err := exec(ctx, "CREATE TEMP TABLE mine (n INT)"); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	if err := InTx(ended, bdb, func(ctx context.Context, tx bun.Tx) error {
		cancel()
		_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (1)")
		return err
	}); !errors.Is(err, context.Canceled) || len(rowsOf(t, bdb)) != 0 {
		t.Fatalf("a request that ended in its transaction: %v, rows %v; want its context's error, nothing kept", err, rowsOf(t, bdb))
	}
	for i := 0; i < 5; i++ {
		if err := exec(ctx, "INSERT INTO temp.mine VALUES (1)"); err != nil {
			t.Fatalf("write %d did not run on the connection of the first: %v", i, err)
		}
	}
	if n := len(w.conns); n != 1 {
		t.Fatalf("%d write connections held, want 1", n)
	}
	// Idle, the database holds no write connection.
	for deadline := time.Now().Add(10 * writeConnIdle); ; time.Sleep(50 * time.Millisecond) {
		_ = w.acquire(ctx)
		n := len(w.conns)
		w.release()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d write connections still held after %v without a write", n, 10*writeConnIdle)
		}
	}
	if err := exec(ctx, "INSERT INTO rows (n) VALUES (2)"); err != nil {
		t.Fatalf("a write after the connection was given back: %v", err)
	}
}
