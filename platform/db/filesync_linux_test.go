//go:build linux

package db

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/uptrace/bun"
)

// descriptorsOn answers the descriptors the process holds on the file fi.
func descriptorsOn(t *testing.T, fi os.FileInfo) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && sameFile(fd, fi) {
			out = append(out, fd)
		}
	}
	return out
}

// TestDBFile_200_SyncsThroughADescriptorOfSQLites: the database file is
// synced through a descriptor SQLite holds on it, and no descriptor is
// opened or closed on the file for it (closing one would drop SQLite's POSIX
// locks on the file).
func TestDBFile_200_SyncsThroughADescriptorOfSQLites(t *testing.T) {
	bdb, w := openGated(t)
	ctx := context.Background()
	if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO rows (n) VALUES (1), (2), (3)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The COMMIT's checkpoint opens a connection of the pool: done before
	// the descriptors are listed.
	waitCheckpoint(t, w)
	path := sqliteFile(ctx, bdb)
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f := dbFile{path: path, fd: -1}
	before := descriptorsOn(t, want)
	if !f.sync() {
		t.Fatal("no descriptor of SQLite's on the database file was found")
	}
	if after := descriptorsOn(t, want); !slices.Equal(after, before) {
		t.Fatalf("descriptors on the database file: %v after the sync, %v before", after, before)
	}
	if !sameFile(f.fd, want) {
		t.Fatalf("descriptor %d is not on %s", f.fd, path)
	}
	fd := f.fd
	if !f.sync() || f.fd != fd || f.synced.Load() != 2 {
		t.Fatalf("second sync: descriptor %d (first %d), %d syncs; want the same descriptor and 2", f.fd, fd, f.synced.Load())
	}
}

// TestDBFile_404_NoDescriptorNoSync: a file the process holds no descriptor
// on, a missing file and an in-memory database are not synced.
func TestDBFile_404_NoDescriptorNoSync(t *testing.T) {
	closed := filepath.Join(t.TempDir(), "closed.db")
	if err := os.WriteFile(closed, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{closed, filepath.Join(t.TempDir(), "missing.db"), ""} {
		f := dbFile{path: path, fd: -1}
		if f.sync() || f.synced.Load() != 0 {
			t.Errorf("%q: synced, want no sync", path)
		}
	}
}

// TestCheckpoint_TheDatabaseFileIsSyncedBeforeTheGateIsTaken: a COMMIT that
// takes the WAL past restartFrames has the checkpoint beside the writers
// start it afresh, and the database file is synced before that checkpoint
// takes the gate, so the gate's own checkpoint has little to write back.
func TestCheckpoint_TheDatabaseFileIsSyncedBeforeTheGateIsTaken(t *testing.T) {
	bdb, w := openGated(t)
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE blobs (n INTEGER PRIMARY KEY, b BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// About two pages a row (an overflow page and a leaf's share): some
	// one and a half times restartFrames in one COMMIT.
	blob := make([]byte, 6000)
	if err := InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
		for i := range 3 * restartFrames / 4 {
			if _, err := tx.ExecContext(ctx, "INSERT INTO blobs (n, b) VALUES (?, ?)", i, blob); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitCheckpoint(t, w)
	if n := w.file.synced.Load(); n != 1 {
		t.Fatalf("%d syncs of the database file, want 1 (before the gate's checkpoint)", n)
	}
}
