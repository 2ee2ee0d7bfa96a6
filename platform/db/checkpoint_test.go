package db

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/uptrace/bun"
)

// TestCheckpoint_WALStartsAfreshUnderSteadyWrites: the write connection takes
// no automatic checkpoint; checkpoints run beside the writers and, under a
// steady stream of COMMITs, the WAL still starts afresh, so its file stays
// far smaller than all that was written through it, and every row is kept.
func TestCheckpoint_WALStartsAfreshUnderSteadyWrites(t *testing.T) {
	bdb, w := openGated(t)
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE blobs (n INTEGER PRIMARY KEY, b BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var auto int
	if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
		return tx.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto)
	}); err != nil || auto != 0 {
		t.Fatalf("the write connection's wal_autocheckpoint: %d, %v; want 0", auto, err)
	}
	// Each insert writes about three pages (two overflow pages and a leaf):
	// some 15,000 pages in all, close to four times restartFrames.
	const writes = 5000
	blob := make([]byte, 6000)
	for i := range writes {
		if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO blobs (n, b) VALUES (?, ?)", i, blob)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); w.checkpointing.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a checkpoint still runs 30 s after the writes")
		}
	}
	var n int
	if err := bdb.QueryRowContext(ctx, "SELECT count(*) FROM blobs").Scan(&n); err != nil || n != writes {
		t.Fatalf("%d rows, %v; want %d", n, err, writes)
	}
	if c := w.checkpoints.Load(); c < 3 {
		t.Fatalf("%d checkpoints beside the writers, want several", c)
	}
	wal, err := os.ReadFile(sqliteFile(ctx, bdb) + "-wal")
	if err != nil || len(wal) < 32 {
		t.Fatalf("WAL file: %d bytes, %v", len(wal), err)
	}
	// The WAL header's checkpoint sequence number counts the times it
	// started afresh. Never started afresh, the WAL would hold every page
	// written: 4,120 bytes each (page and frame header), some 60 MB. How soon
	// it starts afresh depends on how fast the checkpoints beside the writers
	// run (a loaded machine left it at half that size once): a restart in the
	// first three quarters of the writes passes.
	if restarts := binary.BigEndian.Uint32(wal[12:16]); restarts == 0 {
		t.Fatal("the WAL never started afresh (checkpoint sequence number 0)")
	}
	if written := int64(writes) * 3 * 4120; int64(len(wal)) > written*3/4 {
		t.Fatalf("WAL file of %d bytes after %d written through it: it did not start afresh in time", len(wal), written)
	}
}
