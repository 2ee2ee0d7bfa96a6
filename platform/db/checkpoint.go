package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// Checkpoints beside the writers, on SQLite.
//
// A WAL checkpoint copies the pages the WAL holds back into the database
// file, with two fsyncs: the WAL's before, the database file's after. SQLite
// runs one inside the COMMIT that takes the WAL past wal_autocheckpoint
// (1,000) pages, so that COMMIT, holding the write lock, answered only after
// both fsyncs: at a steady 1,000 listing creates a second that was a fifth of
// the write gate's time, and one create in ten waited 10 ms behind it (p90 =
// 10 ms at 40% of one core); with group commit every writer of that COMMIT
// waited, and the p99 grew from 13 to 22 ms.
//
// So the write connections take no automatic checkpoint (takeConn), and a
// checkpoint runs beside the writers instead, on a connection of the pool,
// once about checkpointFrames pages have been written since the last one
// (how many COMMITs that takes is learnt from each checkpoint, which tells
// the WAL's size). PASSIVE: it copies what the WAL held when it began while
// the writers go on; its fsyncs are SQLite's, as before, so what a COMMIT
// made durable stays durable (synchronous=NORMAL: a COMMIT survives the
// process being killed, and the database a power loss).
//
// The WAL only starts again from its beginning when a checkpoint has copied
// all of it, which under steady writes one beside them never does: the pages
// written while it ran are left. So once the WAL holds restartFrames pages,
// checkpoints run again until few pages were written during the last one,
// and a last one runs holding the write gate, copying those few: the next
// COMMIT then starts the WAL afresh. That last checkpoint's fsyncs still
// hold the writers up, once per restartFrames pages instead of once per
// checkpointFrames. Measured on workload C (16 writers): +42% creates a
// second, and at a steady 1,000 a second p95 1.7 ms instead of 10 and p99 10
// instead of 12.
//
// SQLite fsyncs the database file only in a checkpoint that copies the whole
// WAL (one that leaves pages behind need not: the WAL keeps them until it
// starts afresh), so that last checkpoint's fsync wrote back every page the
// checkpoints beside the writers had copied since the WAL last started
// afresh: 12 to 17 ms at restartFrames pages (32 ms at 16,000), and every
// slow create of a steady 1,387 a second had waited behind one. So the
// database file is synced before the gate is taken (dbFile.sync), and the
// gate's checkpoint writes back only its own few pages: p99 at that rate
// 3.2, 3.9 and 5.2 ms instead of 13.9, 10.8 and 13.3 (the benchmark's
// workload C after its closed-loop rounds), creates a second unchanged.
// That sync adds an fsync and takes none away: the gate's checkpoint still
// syncs the file before the WAL starts afresh.
//
// Writes outside InTx, on the pool's other connections, keep SQLite's
// automatic checkpoint.

// checkpointFrames is how many pages written to the WAL call for a
// checkpoint beside the writers. It was SQLite's own wal_autocheckpoint
// default, 1,000, while checkpoints ran inside a COMMIT, where a larger one
// held every writer up for longer. Beside the writers its size holds nobody
// up, and a page written again before the next checkpoint is copied once:
// the index pages that listing creates change at random places are written
// to the WAL many times between two checkpoints. At 4,000 workload C made
// +6% creates a second with −7% CPU per create (10 alternated pairs of 10 s
// rounds against 1,000), and its p99 at a fixed 1,200 a second stayed within
// noise (1.5 to 3.9 ms against 1.5 to 2.5). A restart at 16 times 1,000 pages without the larger
// interval gained nothing, so it is the copying, not the gate's checkpoint.
const checkpointFrames = 4000

// restartFrames is the WAL size, in pages, past which it is started afresh
// (about 64 MB at 4 KiB pages).
const restartFrames = 4 * checkpointFrames

// walKeepBytes is how large the WAL file may stay once the writes stop:
// twice the size it starts afresh at. Under a burst the checkpoints beside
// the writers fall behind and the file grows (to 500 MB in workload C's
// closed-loop rounds); it is cut back while idle (truncateIdle), not in a
// COMMIT: SQLite's journal_size_limit truncates the file in the first COMMIT
// after the WAL starts afresh, holding the write lock, and on the benchmark's
// VM freeing 300 MB took 100 to 200 ms, which every writer waited for (C at a
// fixed rate after its closed-loop rounds: p99 30 to 90 ms, the truncate the
// longest wait in a trace). A variable for the tests.
var walKeepBytes int64 = 2 * restartFrames * 4096

// walTruncateWait is how long the idle truncate waits for readers to leave
// the WAL (its busy timeout) while it holds the write gate: a long read, a
// CSV export, keeps its snapshot, and the truncate then waits for the next
// idle moment rather than hold the writers up.
const walTruncateWait = 100 * time.Millisecond

// sqliteAutoCheckpoint is SQLite's default wal_autocheckpoint, which the
// pool's connections keep (their writes are few and outside InTx) and a write
// connection gets back when it returns to the pool.
const sqliteAutoCheckpoint = 1000

// afterCommit counts a COMMIT of db's write transactions, and starts a
// checkpoint beside the writers when one is due and none is running. The
// holder of the gate calls it.
func (w *writeGate) afterCommit(db *bun.DB) {
	w.sinceCkpt++
	every := int(w.every.Load())
	if w.sinceCkpt < every || !w.checkpointing.CompareAndSwap(false, true) {
		return
	}
	w.sinceCkpt = 0
	go w.checkpoint(db, every)
}

// checkpoint runs a checkpoint beside the writers, learns from it how many
// COMMITs the next one waits for (every COMMITs wrote the pages it found
// added), and starts the WAL afresh once it is restartFrames pages long.
func (w *writeGate) checkpoint(db *bun.DB, every int) {
	defer w.checkpointing.Store(false)
	ctx := context.Background()
	frames, err := walCheckpoint(ctx, db)
	if err != nil {
		return // the database closed, or is failing: the next COMMIT tries again
	}
	w.checkpoints.Add(1)
	added := frames - w.lastFrames
	if frames < w.lastFrames { // the WAL started afresh meanwhile
		added = frames
	}
	w.lastFrames = frames
	w.every.Store(int64(min(max(every*checkpointFrames/max(added, 1), 1), checkpointFrames)))
	if frames < restartFrames {
		return
	}
	// Catch up beside the writers while that shortens the last step.
	for range 5 {
		prev := frames
		if frames, err = walCheckpoint(ctx, db); err != nil {
			return
		}
		w.checkpoints.Add(1)
		if frames-prev < 64 {
			break
		}
	}
	w.file.sync() // the database file written back while the writers go on
	if err := w.acquire(ctx); err != nil {
		return
	}
	w.flush() // a batch handed over with the gate commits first
	if _, err := walCheckpoint(ctx, db); err == nil {
		w.checkpoints.Add(1)
		w.lastFrames = 0
	}
	w.release()
}

// checkpointIdle copies the pages the WAL holds beyond the last checkpoint
// once the writes stopped (releaseIfIdle). Due checkpoints come after
// COMMITs, so the pages of a burst's last COMMITs waited for the next write:
// a write outside InTx (a file's row after its upload) then ran SQLite's own
// checkpoint inside its COMMIT, thousands of pages and two fsyncs (the first
// 50 MiB upload after a burst of listing creates: ~500 MB/s instead of ~800).
// Copied while nothing writes, the WAL starts afresh at the next write.
func (w *writeGate) checkpointIdle(db *bun.DB) {
	defer w.checkpointing.Store(false)
	if _, err := walCheckpoint(context.Background(), db); err == nil {
		w.checkpoints.Add(1)
	}
	w.truncateIdle(db)
}

// truncateIdle cuts the WAL file to nothing when the writes have stopped and
// it is larger than walKeepBytes (see there), holding the write gate: a
// writer that comes meanwhile waits at the gate, as behind any checkpoint.
// TRUNCATE copies what is left, waits for readers to leave the WAL (at most
// walTruncateWait) and truncates; busy, it leaves the file for the next
// idle moment.
func (w *writeGate) truncateIdle(db *bun.DB) {
	if w.file.path == "" {
		return
	}
	if fi, err := os.Stat(w.file.path + "-wal"); err != nil || fi.Size() <= walKeepBytes {
		return
	}
	ctx := context.Background()
	if err := w.acquire(ctx); err != nil {
		return
	}
	defer w.release()
	w.flush() // a batch handed over with the gate commits first
	if err := walTruncate(ctx, db); err == nil {
		w.checkpoints.Add(1)
		w.lastFrames = 0
		w.truncates.Add(1)
	}
}

// walTruncate runs a TRUNCATE checkpoint on a connection of db's pool with a
// busy timeout of walTruncateWait, then gives the connection its own back.
func walTruncate(ctx context.Context, db *bun.DB) error {
	conn, err := db.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", walTruncateWait.Milliseconds())); err != nil {
		return err
	}
	var busy, frames, done int
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
	if _, rerr := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); rerr != nil {
		// A connection left with the short timeout would fail writers that
		// should have waited: it leaves the pool.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return rerr
	}
	if err == nil && busy != 0 {
		err = errWALBusy
	}
	return err
}

// errWALBusy: a TRUNCATE checkpoint found readers in the WAL.
var errWALBusy = errors.New("sqlite: the WAL is in use")

// dbFile is the database file of a gate's checkpoints (filesync_*.go).
type dbFile struct {
	path string // "" for an in-memory database
	// fd is the descriptor of SQLite's that sync used last (-1: none yet);
	// only touched by the checkpoint running.
	fd int
	// synced counts the syncs done.
	synced atomic.Uint64
}

// walCheckpoint runs a PASSIVE checkpoint on a connection of db's pool and
// answers the WAL's size in pages when it began.
func walCheckpoint(ctx context.Context, db *bun.DB) (frames int, err error) {
	var busy, done int
	err = db.DB.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done)
	return frames, err
}
