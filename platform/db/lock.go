package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// DefaultMigrationLockWait bounds how long a start waits for the migration
// lock when the configuration does not say (db.migration_lock_wait).
const DefaultMigrationLockWait = 5 * time.Minute

// migrationLockKey is the PostgreSQL advisory lock of schema changes: the
// bytes "agrimigr". Keep it apart from the other advisory locks of the code
// (the reference-data seed's is "refda").
const migrationLockKey int64 = 0x616772696d696772

// lockPoll is how often a waiting start tries the lock again.
const lockPoll = 200 * time.Millisecond

// LockOptions tune WithMigrationLock.
type LockOptions struct {
	// Wait bounds the wait for a lock another process holds; 0 means
	// DefaultMigrationLockWait.
	Wait time.Duration
	// OnWait, when set, is called once when the lock is found taken, with a
	// description of its holder (for the log).
	OnWait func(holder string)
}

// ErrMigrationLockTimeout is wrapped by the error of a wait that reached its bound.
var ErrMigrationLockTimeout = errors.New("timed out waiting for the migration lock")

type lockHeldKey struct{}

// WithMigrationLock runs fn while this process holds the lock that serialises
// schema changes and start-up writes among every process on the database.
//
// On PostgreSQL it is a session-level advisory lock taken on one dedicated
// connection that is thrown away afterwards: it is not a row, so nothing can
// be left behind; the server releases it when the holder's session ends,
// whatever ends it (SIGTERM, kill -9, a lost node: keepalives are shortened on
// that session so that a vanished host lets go within about half a minute).
// On SQLite it is an exclusive flock(2) on a file beside the database, which
// the kernel releases when the process dies.
//
// A process that finds the lock taken waits (polling, so that cancelling ctx
// stops the wait at once) up to the bound, then fails with an error naming the
// holder. The lock is re-entrant through ctx: MigrateUp and friends called
// inside fn with fn's ctx do not take it again.
func WithMigrationLock(ctx context.Context, bdb *bun.DB, o LockOptions, fn func(ctx context.Context) error) error {
	if held, _ := ctx.Value(lockHeldKey{}).(*bun.DB); held == bdb {
		return fn(ctx)
	}
	if o.Wait <= 0 {
		o.Wait = DefaultMigrationLockWait
	}
	var (
		release func()
		err     error
	)
	if IsPostgres(bdb) {
		release, err = lockPostgres(ctx, bdb, o)
	} else {
		release, err = lockSQLite(ctx, bdb, o)
	}
	if err != nil {
		return err
	}
	defer release()
	return fn(context.WithValue(ctx, lockHeldKey{}, bdb))
}

// waitFor polls try until it answers true, ctx ends or the bound passes.
func waitFor(ctx context.Context, o LockOptions, try func() (bool, error), holder func() string) error {
	deadline := time.Now().Add(o.Wait)
	told := false
	for {
		ok, err := try()
		if err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if ok {
			return nil
		}
		if !told && o.OnWait != nil {
			o.OnWait(holder())
			told = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: another process (%s) has held it for more than %s; the lock is released when that process ends, so stop it if it hangs, or raise db.migration_lock_wait for long migrations",
				ErrMigrationLockTimeout, holder(), o.Wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the migration lock: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

func lockPostgres(ctx context.Context, bdb *bun.DB, o LockOptions) (func(), error) {
	conn, err := bdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	// The session is discarded, never returned to the pool: it carries the
	// settings below, and closing it is what releases the lock for certain.
	discard := func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
	}
	// Best effort (ignored where not allowed): name the holder for waiters, and
	// let the server notice a vanished client after ~10+3×5 s instead of the
	// kernel's default two hours.
	_, _ = conn.ExecContext(ctx, "SET application_name = 'agritrade migrations'")
	_, _ = conn.ExecContext(ctx, "SET tcp_keepalives_idle = 10")
	_, _ = conn.ExecContext(ctx, "SET tcp_keepalives_interval = 5")
	_, _ = conn.ExecContext(ctx, "SET tcp_keepalives_count = 3")
	try := func() (bool, error) {
		var ok bool
		err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", migrationLockKey).Scan(&ok)
		return ok, err
	}
	holder := func() string {
		var pid int
		var app, addr, since string
		// A bigint advisory key shows in pg_locks as classid (high 32 bits) and objid (low 32 bits).
		err := bdb.QueryRowContext(ctx, `SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local'),
			coalesce(to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ? AND l.objid = ? AND l.objsubid = 1 LIMIT 1`,
			uint32(uint64(migrationLockKey)>>32), uint32(uint64(migrationLockKey)&0xffffffff)).Scan(&pid, &app, &addr, &since)
		if err != nil {
			return "holder unknown"
		}
		return fmt.Sprintf("PostgreSQL backend pid %d, %q from %s since %s", pid, app, addr, since)
	}
	if err := waitFor(ctx, o, try, holder); err != nil {
		discard()
		return nil, err
	}
	return func() {
		// Unlock explicitly (the next process need not wait for the close to
		// reach the server), then drop the session.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", migrationLockKey)
		discard()
	}, nil
}

// sqlitePath answers the file of the main database ("" for an in-memory one).
func sqlitePath(ctx context.Context, bdb *bun.DB) (string, error) {
	var path string
	err := bdb.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path)
	return path, err
}

func lockSQLite(ctx context.Context, bdb *bun.DB, o LockOptions) (func(), error) {
	path, err := sqlitePath(ctx, bdb)
	if err != nil {
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	if path == "" {
		// An in-memory database belongs to this process alone.
		return func() {}, nil
	}
	return lockFile(ctx, path+".migrate-lock", o)
}
