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
	leave, err := enterWrite(context.Background(), bdb)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := enterWrite(short, traced); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the copy passed the gate the DB holds: %v", err)
	}
	leave()
	again, err := enterWrite(context.Background(), traced)
	if err != nil {
		t.Fatalf("the copy after the gate was released: %v", err)
	}
	again()
}
