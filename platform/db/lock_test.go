package db_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// sharedDSN returns the DSN of a fresh database of the dialect that several
// pools (standing in for several processes) can open.
func sharedDSN(t *testing.T, d testkit.Dialect) string {
	t.Helper()
	if d == testkit.SQLite {
		return "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	}
	return testkit.PostgresDSN(t)
}

func open(t *testing.T, dsn string) *bun.DB {
	t.Helper()
	bdb, err := db.Open(context.Background(), dsn, db.Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	return bdb
}

func forDialects(t *testing.T, fn func(t *testing.T, d testkit.Dialect)) {
	for _, d := range []testkit.Dialect{testkit.SQLite, testkit.Postgres} {
		t.Run(string(d), func(t *testing.T) { fn(t, d) })
	}
}

func appliedNames(t *testing.T, bdb *bun.DB, set string) []string {
	t.Helper()
	var names []string
	if err := bdb.NewSelect().TableExpr("bun_migrations_"+set).Column("name").Order("name").Scan(context.Background(), &names); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestConcurrentMigrationsApplyOnce: eight pools (as eight replicas starting
// at once) migrate two sets of a fresh database at the same moment. Every one
// succeeds, and each migration, whose CREATE TABLE would fail a second time,
// is applied exactly once. The migrations tables are created under the lock,
// so the duplicate pg_type race of CREATE TABLE IF NOT EXISTS cannot happen.
func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	forDialects(t, func(t *testing.T, d testkit.Dialect) {
		dsn := sharedDSN(t, d)
		ms, err := db.SQLMigrations(migrationFiles)
		if err != nil {
			t.Fatal(err)
		}
		other, err := db.SQLMigrations(fstest.MapFS{"0001_other.up.sql": {Data: []byte("CREATE TABLE other_things (id INT);\n")}})
		if err != nil {
			t.Fatal(err)
		}
		const replicas = 8
		pools := make([]*bun.DB, replicas)
		for i := range pools {
			pools[i] = open(t, dsn)
		}
		var wg sync.WaitGroup
		errs := make([]error, replicas)
		start := make(chan struct{})
		for i, p := range pools {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = db.WithMigrationLock(context.Background(), p, db.LockOptions{Wait: time.Minute}, func(ctx context.Context) error {
					if _, err := db.MigrateUp(ctx, p, "demo", ms); err != nil {
						return err
					}
					_, err := db.MigrateUp(ctx, p, "other", other)
					return err
				})
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		}
		if got := strings.Join(appliedNames(t, pools[0], "demo"), ","); got != "0001,0002,0003" {
			t.Fatalf("demo applied %s", got)
		}
		if got := strings.Join(appliedNames(t, pools[0], "other"), ","); got != "0001" {
			t.Fatalf("other applied %s", got)
		}
	})
}

// TestStaleBunLockRowBlocksNothing: versions before this one serialised with
// a row in bun_migration_locks_<set>; a start killed while holding it left the
// row behind and every later start failed. Such a leftover is ignored, then
// dropped.
func TestStaleBunLockRowBlocksNothing(t *testing.T) {
	forDialects(t, func(t *testing.T, d testkit.Dialect) {
		bdb := open(t, sharedDSN(t, d))
		ctx := context.Background()
		for _, q := range []string{
			"CREATE TABLE bun_migration_locks_demo (id BIGINT PRIMARY KEY, table_name VARCHAR UNIQUE)",
			"INSERT INTO bun_migration_locks_demo (id, table_name) VALUES (1, 'bun_migrations_demo')",
		} {
			if _, err := bdb.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		ms, err := db.SQLMigrations(migrationFiles)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateUp(ctx, bdb, "demo", ms); err != nil {
			t.Fatalf("a stale lock row blocked the migration: %v", err)
		}
		if tableExists(t, bdb, "bun_migration_locks_demo") {
			t.Fatal("the old lock table is still there")
		}
	})
}

// TestMigrationLockWaits: a second process waits while the first holds the
// lock and goes on when it is released; a wait is bounded, and the error of a
// wait that ran out names the holder; cancelling the wait ends it at once.
func TestMigrationLockWaits(t *testing.T) {
	forDialects(t, func(t *testing.T, d testkit.Dialect) {
		dsn := sharedDSN(t, d)
		holder, waiter := open(t, dsn), open(t, dsn)
		held, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- db.WithMigrationLock(context.Background(), holder, db.LockOptions{}, func(context.Context) error {
				close(held)
				<-release
				return nil
			})
		}()
		<-held

		err := db.WithMigrationLock(context.Background(), waiter, db.LockOptions{Wait: 500 * time.Millisecond}, func(context.Context) error {
			t.Error("ran while another held the lock")
			return nil
		})
		if !errors.Is(err, db.ErrMigrationLockTimeout) {
			t.Fatalf("bounded wait: %v", err)
		}
		if d == testkit.Postgres && !strings.Contains(err.Error(), `"agritrade migrations"`) {
			t.Fatalf("the error does not name the holder: %v", err)
		}
		if d == testkit.SQLite && !strings.Contains(err.Error(), ".migrate-lock") {
			t.Fatalf("the error does not name the lock file: %v", err)
		}
		t.Logf("bounded wait: %v", err)

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		begun := time.Now()
		err = db.WithMigrationLock(ctx, waiter, db.LockOptions{Wait: time.Hour}, func(context.Context) error { return nil })
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(begun) > 5*time.Second {
			t.Fatalf("cancelled wait: %v after %v", err, time.Since(begun))
		}

		var told []string
		got := make(chan error, 1)
		go func() {
			got <- db.WithMigrationLock(context.Background(), waiter, db.LockOptions{Wait: time.Minute, OnWait: func(h string) { told = append(told, h) }},
				func(context.Context) error { return nil })
		}()
		time.Sleep(400 * time.Millisecond)
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("the waiter did not get the released lock: %v", err)
		}
		if len(told) != 1 {
			t.Fatalf("OnWait called %d times", len(told))
		}
	})
}

// TestMigrationLockDiesWithItsHolder: the PostgreSQL lock is a session's, so
// when the holder's session ends without any unlock (its process killed, its
// connection cut) the next process gets it.
func TestMigrationLockDiesWithItsHolder(t *testing.T) {
	dsn := sharedDSN(t, testkit.Postgres)
	holder, waiter, admin := open(t, dsn), open(t, dsn), open(t, dsn)
	held := make(chan struct{})
	hang, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		_ = db.WithMigrationLock(hang, holder, db.LockOptions{}, func(ctx context.Context) error {
			close(held)
			<-ctx.Done() // the holder hangs until the test ends
			return nil
		})
	}()
	<-held
	var killed bool
	err := admin.QueryRowContext(context.Background(),
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'agritrade migrations' AND datname = current_database()").Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminate the holder's session: %v %v", killed, err)
	}
	begun := time.Now()
	if err := db.WithMigrationLock(context.Background(), waiter, db.LockOptions{Wait: 30 * time.Second}, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("the lock outlived its holder's session: %v", err)
	}
	t.Logf("lock taken %v after its holder's session ended", time.Since(begun).Round(time.Millisecond))
}

// TestMigrationCommitsWithItsRecord: a migration that fails half-way leaves
// neither its first statements nor a record, so the next start (with the
// migration fixed) applies it whole.
func TestMigrationCommitsWithItsRecord(t *testing.T) {
	forDialects(t, func(t *testing.T, d testkit.Dialect) {
		bdb := open(t, sharedDSN(t, d))
		ctx := context.Background()
		broken, err := db.SQLMigrations(fstest.MapFS{
			"0001_first.up.sql":  {Data: []byte("CREATE TABLE first_table (id INT);\n")},
			"0002_second.up.sql": {Data: []byte("CREATE TABLE half_table (id INT);\nINSERT INTO no_such_table VALUES (1);\n")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.MigrateUp(ctx, bdb, "demo", broken); err == nil || !strings.Contains(err.Error(), "0002") {
			t.Fatalf("broken migration: %v", err)
		}
		if tableExists(t, bdb, "half_table") || !tableExists(t, bdb, "first_table") {
			t.Fatal("the failed migration left part of its work")
		}
		if got := strings.Join(appliedNames(t, bdb, "demo"), ","); got != "0001" {
			t.Fatalf("recorded %s", got)
		}
		fixed, err := db.SQLMigrations(fstest.MapFS{
			"0001_first.up.sql":  {Data: []byte("CREATE TABLE first_table (id INT);\n")},
			"0002_second.up.sql": {Data: []byte("CREATE TABLE half_table (id INT);\n")},
		})
		if err != nil {
			t.Fatal(err)
		}
		g, err := db.MigrateUp(ctx, bdb, "demo", fixed)
		if err != nil || len(g.Migrations) != 1 || g.Migrations[0].Name != "0002" {
			t.Fatalf("fixed migration: %v %v", g, err)
		}
	})
}

// TestStatusWritesNothing: status on a fresh database reports everything
// pending and creates no table.
func TestStatusWritesNothing(t *testing.T) {
	forDialects(t, func(t *testing.T, d testkit.Dialect) {
		bdb := open(t, sharedDSN(t, d))
		ms, err := db.SQLMigrations(migrationFiles)
		if err != nil {
			t.Fatal(err)
		}
		applied, pending, err := db.Status(context.Background(), bdb, "demo", ms)
		if err != nil || len(applied) != 0 || len(pending) != 3 {
			t.Fatalf("status: %d applied, %d pending, %v", len(applied), len(pending), err)
		}
		if tableExists(t, bdb, "bun_migrations_demo") {
			t.Fatal("status created the migrations table")
		}
	})
}
