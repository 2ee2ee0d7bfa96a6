package db_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

var migrationFiles = fstest.MapFS{
	"0001_things.up.sql":         {Data: []byte("-- a table on both dialects\nCREATE TABLE things (\n  id TEXT PRIMARY KEY,\n  name TEXT NOT NULL UNIQUE,\n  made_at TIMESTAMPTZ NOT NULL\n);\nCREATE INDEX things_made_at ON things (made_at);\n")},
	"0001_things.down.sql":       {Data: []byte("DROP TABLE things;\n")},
	"0002_dialect.pg.up.sql":     {Data: []byte("CREATE TABLE only_pg (id INT);\nCREATE FUNCTION agritrade_one() RETURNS int AS $$\nBEGIN\n  RETURN 1;\nEND;\n$$ LANGUAGE plpgsql;\n")},
	"0002_dialect.sqlite.up.sql": {Data: []byte("CREATE TABLE only_sqlite (id INTEGER);\n")},
	"0002_dialect.down.sql":      {Data: []byte("SELECT 1;\n")},
	"0003_only_pg.pg.up.sql":     {Data: []byte("CREATE INDEX things_name_lower ON things (lower(name));\n")},
	"notes.md":                   {Data: []byte("ignored")},
}

func tableExists(t *testing.T, bdb *bun.DB, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?"
	if db.IsPostgres(bdb) {
		q = "SELECT count(*) FROM information_schema.tables WHERE table_name=?"
	}
	var n int
	if err := bdb.QueryRowContext(context.Background(), q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestSQLMigrationsOnBothDialects(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		ms, err := db.SQLMigrations(migrationFiles)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ms.Sorted()); n != 3 {
			t.Fatalf("%d migrations, want 3", n)
		}
		if _, err := db.MigrateUp(ctx, bdb, "demo", ms); err != nil {
			t.Fatal(err)
		}
		pg := db.IsPostgres(bdb)
		if !tableExists(t, bdb, "things") || tableExists(t, bdb, "only_pg") != pg || tableExists(t, bdb, "only_sqlite") == pg {
			t.Fatalf("dialect variants applied wrongly (postgres=%v)", pg)
		}
		// Per-module tables: another set does not see these migrations.
		applied, pending, err := db.Status(ctx, bdb, "demo", ms)
		if err != nil || len(applied) != 3 || len(pending) != 0 {
			t.Fatalf("status %d applied %d pending %v", len(applied), len(pending), err)
		}
		if !tableExists(t, bdb, "bun_migrations_demo") {
			t.Fatal("no per-module migrations table")
		}
		// Running again is a no-op.
		g, err := db.MigrateUp(ctx, bdb, "demo", ms)
		if err != nil || !g.IsZero() {
			t.Fatalf("second run applied %v (%v)", g, err)
		}
		// Unique violations are recognised on both dialects.
		ins := "INSERT INTO things (id, name, made_at) VALUES (?, ?, CURRENT_TIMESTAMP)"
		if _, err := bdb.ExecContext(ctx, ins, "a", "same"); err != nil {
			t.Fatal(err)
		}
		_, err = bdb.ExecContext(ctx, ins, "b", "same")
		if !db.IsUniqueViolation(err) {
			t.Fatalf("unique violation not recognised: %v", err)
		}
		if _, err := db.MigrateDown(ctx, bdb, "demo", ms); err != nil {
			t.Fatal(err)
		}
		if tableExists(t, bdb, "things") {
			t.Fatal("rollback left the table")
		}
	})
}

func TestSplitStatements(t *testing.T) {
	got := db.SplitStatements("-- c\nCREATE TABLE a (x int);\n\nCREATE FUNCTION f() RETURNS int AS $$\nBEGIN\n  RETURN 1;\nEND;\n$$ LANGUAGE plpgsql;\nSELECT 1")
	if len(got) != 3 || got[2] != "SELECT 1" {
		t.Fatalf("%d statements: %q", len(got), got)
	}
}

func TestSQLiteIsWAL(t *testing.T) {
	bdb := testkit.DB(t, testkit.SQLite)
	var mode string
	if err := bdb.QueryRowContext(context.Background(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v)", mode, err)
	}
	var timeout int
	if err := bdb.QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&timeout); err != nil || timeout < 1000 {
		t.Fatalf("busy timeout %d (%v)", timeout, err)
	}
	// synchronous=NORMAL (1): a commit is in the WAL before it is
	// acknowledged, so it survives the process being killed; checkpoints at
	// SQLite's 1,000 pages (see openSQLite).
	for pragma, want := range map[string]int{"synchronous": 1, "wal_autocheckpoint": 1000} {
		var got int
		if err := bdb.QueryRowContext(context.Background(), "PRAGMA "+pragma).Scan(&got); err != nil || got != want {
			t.Fatalf("%s %d (%v), want %d", pragma, got, err, want)
		}
	}
}

// TestSQLMigrations_RefusesTwoMigrationsWithOneNumber: two features that
// picked the same number would share one record and one would never run.
func TestSQLMigrations_RefusesTwoMigrationsWithOneNumber(t *testing.T) {
	_, err := db.SQLMigrations(fstest.MapFS{
		"0004_events.up.sql":         {Data: []byte("CREATE TABLE events (id INT);\n")},
		"0004_outbox_trace.up.sql":   {Data: []byte("ALTER TABLE outbox ADD COLUMN trace TEXT;\n")},
		"0003_earlier.pg.up.sql":     {Data: []byte("SELECT 1;\n")},
		"0003_earlier.sqlite.up.sql": {Data: []byte("SELECT 1;\n")},
	})
	if err == nil || !strings.Contains(err.Error(), "0004") || !strings.Contains(err.Error(), "events") || !strings.Contains(err.Error(), "outbox_trace") {
		t.Fatalf("duplicate numbers: %v", err)
	}
	// One migration in two dialects is one migration, not a duplicate.
	if _, err := db.SQLMigrations(fstest.MapFS{
		"0003_earlier.pg.up.sql":     {Data: []byte("SELECT 1;\n")},
		"0003_earlier.sqlite.up.sql": {Data: []byte("SELECT 1;\n")},
	}); err != nil {
		t.Fatal(err)
	}
}

// TestInTx_ConcurrentWritersAllCommit: many write transactions at once, each
// holding its transaction open a moment, all commit on both dialects (on
// SQLite they queue at the write gate instead of SQLite's busy handler), and a
// transaction that fails or whose context ends releases its turn.
func TestInTx_ConcurrentWritersAllCommit(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		table := "gate_" + strings.ReplaceAll(testkit.UniqueName("t"), "-", "_")
		if _, err := bdb.ExecContext(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		if err := db.InTx(ctx, bdb, func(context.Context, bun.Tx) error { return errors.New("roll back") }); err == nil {
			t.Fatal("a failing transaction answered no error")
		}
		const writers = 40
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
					if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (id) VALUES (?)", i); err != nil {
						return err
					}
					time.Sleep(2 * time.Millisecond)
					return nil
				})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a concurrent writer failed: %v", err)
			}
		}
		var n int
		if err := bdb.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != writers {
			t.Fatalf("%d rows committed, want %d", n, writers)
		}
		// A writer whose context has ended does not start (and takes no turn).
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := db.InTx(done, bdb, func(context.Context, bun.Tx) error { return nil }); err == nil {
			t.Fatal("InTx with an ended context answered no error")
		}
		if err := db.InTx(ctx, bdb, func(context.Context, bun.Tx) error { return nil }); err != nil {
			t.Fatalf("the gate was not released: %v", err)
		}
	})
}

// TestSQLite_ConnectionsStayOpenWhenIdle: connections are kept after a burst
// (database/sql keeps 2 by default; each new one reads the schema again).
func TestSQLite_ConnectionsStayOpenWhenIdle(t *testing.T) {
	bdb := testkit.DB(t, testkit.SQLite)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := bdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(50 * time.Millisecond)
			_ = tx.Rollback()
		}()
	}
	wg.Wait()
	st := bdb.Stats()
	if st.MaxIdleClosed != 0 || st.Idle < 2 {
		t.Fatalf("after a burst: %d connections closed for idleness, %d idle; want none closed", st.MaxIdleClosed, st.Idle)
	}
}

// TestConn_InTx: a store's Conn bound by InTx writes in the transaction: kept
// when fn returns nil, gone when it fails, and the pool's Conn is untouched.
func TestConn_InTx(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		table := "conn_" + strings.ReplaceAll(testkit.UniqueName("t"), "-", "_")
		if _, err := bdb.ExecContext(ctx, "CREATE TABLE "+table+" (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		c := db.NewConn(bdb)
		insert := func(id int) func(context.Context, db.Conn) error {
			return func(ctx context.Context, tx db.Conn) error {
				if _, isTx := tx.IDB.(bun.Tx); !isTx {
					t.Fatalf("the bound Conn runs on %T, want the transaction", tx.IDB)
				}
				_, err := tx.NewRaw("INSERT INTO "+table+" (id) VALUES (?)", id).Exec(ctx)
				return err
			}
		}
		if err := c.InTx(ctx, insert(1)); err != nil {
			t.Fatal(err)
		}
		fail := errors.New("roll back")
		if err := c.InTx(ctx, func(ctx context.Context, tx db.Conn) error {
			if err := insert(2)(ctx, tx); err != nil {
				return err
			}
			return fail
		}); !errors.Is(err, fail) {
			t.Fatalf("err %v, want fn's", err)
		}
		var ids []int
		if err := c.NewRaw("SELECT id FROM "+table+" ORDER BY id").Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0] != 1 {
			t.Fatalf("rows %v, want only the committed 1", ids)
		}
		if _, isDB := c.IDB.(*bun.DB); !isDB {
			t.Fatalf("the pool's Conn runs on %T after InTx", c.IDB)
		}
	})
}

// TestBeforeCommit: what a transaction registers runs after its function, in
// the transaction, in order (a key once); an error from it rolls everything
// back and is InTx's answer; outside InTx nothing is registered.
func TestBeforeCommit(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		if _, err := bdb.ExecContext(ctx, "CREATE TABLE steps (n INT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		insert := func(tx bun.Tx, n int) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO steps (n) VALUES (?)", n)
				return err
			}
		}
		type key struct{}
		err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			if !db.BeforeCommit(ctx, key{}, insert(tx, 1)) || !db.BeforeCommit(ctx, key{}, insert(tx, 99)) ||
				!db.BeforeCommit(ctx, nil, insert(tx, 3)) {
				t.Error("BeforeCommit answered false inside InTx")
			}
			// Registered before, run after what the function itself writes.
			_, err := tx.ExecContext(ctx, "INSERT INTO steps (n) VALUES (0)")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		if err := bdb.NewSelect().Table("steps").Column("n").Scan(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 3 {
			t.Fatalf("steps %v, want [0 1 3]", got)
		}

		failed := errors.New("refused at commit")
		err = db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			db.BeforeCommit(ctx, nil, func(context.Context) error { return failed })
			_, err := tx.ExecContext(ctx, "INSERT INTO steps (n) VALUES (7)")
			return err
		})
		if !errors.Is(err, failed) {
			t.Fatalf("InTx answered %v, want the before-commit error", err)
		}
		if n, _ := bdb.NewSelect().Table("steps").Where("n = 7").Count(ctx); n != 0 {
			t.Fatal("the write of a transaction whose before-commit step failed was kept")
		}
		if db.BeforeCommit(ctx, nil, func(context.Context) error { return nil }) {
			t.Fatal("BeforeCommit answered true outside InTx")
		}
	})
}

// TestClaim: on a context with a claim the first transaction waits, open, for
// Commit, which writes the claim's row and commits everything; a later
// transaction of the request runs in it as a savepoint (its error undoes its
// own writes only); what was registered to run before and after the commit
// runs at Commit; Abort rolls all back and frees the write gate.
func TestClaim(t *testing.T) {
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		ctx := context.Background()
		table := "claim_" + strings.ReplaceAll(testkit.UniqueName("t"), "-", "_")
		if _, err := bdb.ExecContext(ctx, "CREATE TABLE "+table+" (n INT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		exec := func(ctx context.Context, tx bun.Tx, n int) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (n) VALUES (?)", n)
			return err
		}
		rows := func() []int {
			got := []int{}
			if err := bdb.NewSelect().Table(table).Column("n").Order("n").Scan(ctx, &got); err != nil {
				t.Fatal(err)
			}
			return got
		}
		cctx, cl := db.WithClaim(ctx)
		var events []string
		if err := db.InTx(cctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			db.AfterCommit(ctx, func() { events = append(events, "after") })
			db.BeforeCommit(ctx, nil, func(ctx context.Context) error { events = append(events, "before"); return exec(ctx, tx, 3) })
			return exec(ctx, tx, 1)
		}); err != nil || !cl.Open() {
			t.Fatalf("first transaction: %v, open %v", err, cl.Open())
		}
		failed := errors.New("second fails")
		if err := db.InTx(cctx, bdb, func(ctx context.Context, tx bun.Tx) error {
			if err := exec(ctx, tx, 7); err != nil {
				return err
			}
			return failed
		}); !errors.Is(err, failed) {
			t.Fatalf("second transaction: %v, want its own error", err)
		}
		if err := db.InTx(cctx, bdb, func(ctx context.Context, tx bun.Tx) error { return exec(ctx, tx, 2) }); err != nil {
			t.Fatal(err)
		}
		if got := rows(); len(got) != 0 || len(events) != 0 {
			t.Fatalf("before Commit: rows %v, events %v; want none", got, events)
		}
		if err := cl.Commit(func(ctx context.Context, tx bun.Tx) error { return exec(ctx, tx, 4) }); err != nil {
			t.Fatal(err)
		}
		if got := rows(); len(got) != 4 || got[0] != 1 || got[1] != 2 || got[2] != 3 || got[3] != 4 {
			t.Fatalf("after Commit: rows %v, want [1 2 3 4] (7 undone with its savepoint)", got)
		}
		if len(events) != 2 || events[0] != "before" || events[1] != "after" {
			t.Fatalf("events %v, want [before after]", events)
		}
		// After Commit, a transaction of the same context is an ordinary one.
		if err := db.InTx(cctx, bdb, func(ctx context.Context, tx bun.Tx) error { return exec(ctx, tx, 5) }); err != nil || cl.Open() || len(rows()) != 5 {
			t.Fatalf("after Commit: %v, open %v, rows %v", err, cl.Open(), rows())
		}

		// A failing claim write rolls the change back; Abort too.
		cctx, cl = db.WithClaim(ctx)
		if err := db.InTx(cctx, bdb, func(ctx context.Context, tx bun.Tx) error { return exec(ctx, tx, 8) }); err != nil {
			t.Fatal(err)
		}
		if err := cl.Commit(func(context.Context, bun.Tx) error { return failed }); !errors.Is(err, failed) {
			t.Fatalf("Commit: %v, want the write's error", err)
		}
		cctx, cl = db.WithClaim(ctx)
		if err := db.InTx(cctx, bdb, func(ctx context.Context, tx bun.Tx) error { return exec(ctx, tx, 9) }); err != nil {
			t.Fatal(err)
		}
		cl.Abort()
		cl.Abort() // twice is harmless
		if got := rows(); len(got) != 5 {
			t.Fatalf("rows %v, want the five committed only", got)
		}
		// The write gate and the connection were given back.
		if err := db.InTx(ctx, bdb, func(ctx context.Context, tx bun.Tx) error { return exec(ctx, tx, 6) }); err != nil || len(rows()) != 6 {
			t.Fatalf("a write after Abort: %v, rows %v", err, rows())
		}
	})
}
