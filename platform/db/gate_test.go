package db

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

type noHook struct{}

func (noHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (noHook) AfterQuery(context.Context, *bun.QueryEvent)                        {}

// TestWriteGate_SharedByCopiesOfTheDB: a copy of the DB with a query hook (as
// tracing makes) passes the same write gate as the DB it was made from.
func TestWriteGate_SharedByCopiesOfTheDB(t *testing.T) {
	bdb, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "gate.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	traced := bdb.WithQueryHook(noHook{})
	_, leave, err := enterWrite(context.Background(), bdb)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := enterWrite(short, traced); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the copy passed the gate the DB holds: %v", err)
	}
	leave(nil)
	_, again, err := enterWrite(context.Background(), traced)
	if err != nil {
		t.Fatalf("the copy after the gate was released: %v", err)
	}
	again(nil)
}

// TestWriteGate_WritesOnOneConnection: InTx transactions on SQLite run on one
// connection (a TEMP table, which only its connection sees, is there from one
// to the next); a transaction whose request's context ends meanwhile gives
// that connection back to the pool (database/sql may have discarded it), and
// the next one takes one again; idle, the connection goes back too.
func TestWriteGate_WritesOnOneConnection(t *testing.T) {
	bdb, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "one.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
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
	for i := 0; i < 5; i++ {
		if err := exec(ctx, "INSERT INTO temp.mine VALUES (1)"); err != nil {
			t.Fatalf("write %d did not run on the connection of the first: %v", i, err)
		}
	}
	g, _ := writeGates.Load(bdb.DB)
	if n := len(g.(*writeGate).conns); n != 1 {
		t.Fatalf("%d write connections held, want 1", n)
	}
	ended, cancel := context.WithCancel(ctx)
	_ = InTx(ended, bdb, func(ctx context.Context, tx bun.Tx) error {
		cancel()
		return nil
	})
	if n := len(g.(*writeGate).conns); n != 0 {
		t.Fatalf("%d write connections held after a request ended in its transaction, want it given back", n)
	}
	if err := exec(ctx, "CREATE TABLE after_it (n INT)"); err != nil {
		t.Fatalf("a write after the connection was given back: %v", err)
	}
	// Idle, the database holds no write connection.
	for deadline := time.Now().Add(10 * writeConnIdle); ; time.Sleep(50 * time.Millisecond) {
		g.(*writeGate).gate <- struct{}{}
		n := len(g.(*writeGate).conns)
		<-g.(*writeGate).gate
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d write connections still held after %v without a write", n, 10*writeConnIdle)
		}
	}
}
