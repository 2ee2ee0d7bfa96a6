package db

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
	// close to four times restartFrames in all.
	const writes = 5 * restartFrames / 4
	blob := make([]byte, 6000)
	for i := range writes {
		if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO blobs (n, b) VALUES (?, ?)", i, blob)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitCheckpoint(t, w)
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
	// written: 4,120 bytes each (page and frame header), some 250 MB. How soon
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

// waitCheckpoint waits for the checkpoint running beside the writers, if one
// runs, to end.
func waitCheckpoint(t *testing.T, w *writeGate) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); w.checkpointing.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a checkpoint still runs 30 s after the writes")
		}
	}
}

// TestCheckpoint_AnIdleGateCopiesTheWALBack: the pages of the last COMMITs
// before the writes stop, too few for a checkpoint to be due, are copied into
// the database file once the gate has been idle for writeConnIdle: a write
// outside InTx then finds nothing to checkpoint inside its COMMIT. The file
// is read as it is on disk, without the WAL (immutable).
func TestCheckpoint_AnIdleGateCopiesTheWALBack(t *testing.T) {
	bdb, w := openGated(t)
	ctx := context.Background()
	file := sqliteFile(ctx, bdb)
	// onDisk counts the rows in the database file; -1 before the table is.
	onDisk := func() int {
		t.Helper()
		disk, err := sql.Open("sqlite", "file:"+file+"?immutable=1")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = disk.Close() }()
		var n int
		if err := disk.QueryRowContext(ctx, "SELECT count(*) FROM rows").Scan(&n); err != nil {
			return -1
		}
		return n
	}
	if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error { return nil }); err != nil {
		t.Fatal(err) // the table's creation, copied back by the first checkpoint (due at once)
	}
	for deadline := time.Now().Add(5 * time.Second); w.checkpointing.Load() || onDisk() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the table is not in the database file")
		}
	}
	w.every.Store(1000) // no checkpoint due for the writes below
	before := w.checkpoints.Load()
	for i := range 3 {
		if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (?)", i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := onDisk(); n != 0 {
		t.Fatalf("%d rows in the database file right after the writes, want them only in the WAL", n)
	}
	// The checkpoint copies the rows before it counts itself; it holds
	// checkpointing until it has.
	for deadline := time.Now().Add(writeConnIdle + 5*time.Second); w.checkpointing.Load() || onDisk() != 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows in the database file %s after the writes stopped, want 3", onDisk(), writeConnIdle+5*time.Second)
		}
	}
	if c := w.checkpoints.Load() - before; c != 1 {
		t.Fatalf("%d checkpoints after the writes stopped, want 1 (the idle one)", c)
	}
}

// growWAL writes blobs through InTx until the WAL file holds more than
// walKeepBytes, and answers how many rows it wrote.
func growWAL(t *testing.T, bdb *bun.DB, wal string) int {
	t.Helper()
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS blobs (n INTEGER PRIMARY KEY, b BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := bdb.QueryRowContext(ctx, "SELECT count(*) FROM blobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 6000)
	for start := n; ; n++ {
		if fi, err := os.Stat(wal); err == nil && fi.Size() > walKeepBytes {
			return n - start
		}
		if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO blobs (n, b) VALUES (?, ?)", n, blob)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// openSmallWAL is openGated with walKeepBytes at 512 KiB for the test, and
// the path of the WAL file.
func openSmallWAL(t *testing.T) (*bun.DB, *writeGate, string) {
	t.Helper()
	keep := walKeepBytes
	t.Cleanup(func() { walKeepBytes = keep })
	walKeepBytes = 512 << 10
	bdb, w := openGated(t)
	return bdb, w, sqliteFile(context.Background(), bdb) + "-wal"
}

// TestCheckpoint_AnIdleGateCutsALargeWALBack: a WAL file grown past
// walKeepBytes is truncated once the writes stop, by the gate, not in a
// writer's COMMIT; every row stays, and writes go on afterwards.
func TestCheckpoint_AnIdleGateCutsALargeWALBack(t *testing.T) {
	bdb, w, wal := openSmallWAL(t)
	ctx := context.Background()
	written := growWAL(t, bdb, wal)
	// The file is empty as soon as the checkpoint has truncated it; the gate
	// counts the truncate once walTruncate has returned, a moment later.
	for deadline := time.Now().Add(writeConnIdle + 10*time.Second); ; time.Sleep(50 * time.Millisecond) {
		if fi, err := os.Stat(wal); err == nil && fi.Size() == 0 && w.truncates.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WAL file is not cut back %s after the writes stopped (%d truncates counted)", writeConnIdle+10*time.Second, w.truncates.Load())
		}
	}
	if n := w.truncates.Load(); n != 1 {
		t.Fatalf("%d truncates, want 1", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collectors(ctx, bdb)...)
	want := "# HELP agritrade_sqlite_wal_truncates_total WAL files cut back to nothing by an idle write gate after a burst had grown them past twice their restart size (agritrade_sqlite_wal_bytes).\n" +
		"# TYPE agritrade_sqlite_wal_truncates_total counter\nagritrade_sqlite_wal_truncates_total 1\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "agritrade_sqlite_wal_truncates_total"); err != nil {
		t.Fatal(err)
	}
	if again := growWAL(t, bdb, wal); again == 0 {
		t.Fatal("no row written after the truncate")
	}
	var n int
	if err := bdb.QueryRowContext(ctx, "SELECT count(*) FROM blobs").Scan(&n); err != nil || n <= written {
		t.Fatalf("%d rows (%v), want more than the %d written before the truncate", n, err, written)
	}
}

// TestCheckpoint_AReaderInTheWALPutsTheTruncateOff: a read that holds its
// snapshot in the WAL (a long export) keeps the file; the truncate gives up
// after walTruncateWait instead of holding the writers, and the pool's
// connections keep their busy timeout.
func TestCheckpoint_AReaderInTheWALPutsTheTruncateOff(t *testing.T) {
	bdb, w, wal := openSmallWAL(t)
	ctx := context.Background()
	growWAL(t, bdb, wal)
	reader, err := bdb.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Rollback() }()
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM blobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	growWAL(t, bdb, wal) // past the reader's snapshot
	time.Sleep(writeConnIdle + 2*time.Second)
	waitCheckpoint(t, w)
	if got := w.truncates.Load(); got != 0 {
		t.Fatalf("%d truncates under a reader, want 0", got)
	}
	if fi, err := os.Stat(wal); err != nil || fi.Size() <= walKeepBytes {
		t.Fatalf("WAL file %v (%v): cut back under a reader", fi.Size(), err)
	}
	for range 10 { // every connection of the pool, in turn
		var ms int
		if err := bdb.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&ms); err != nil || ms != int(busyTimeout.Milliseconds()) {
			t.Fatalf("a pool connection's busy timeout: %d ms (%v), want %d", ms, err, busyTimeout.Milliseconds())
		}
	}
}
