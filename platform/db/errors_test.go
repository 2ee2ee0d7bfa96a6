package db_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// closedPort answers a local TCP port nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestUnavailableOnPostgres classifies errors the real server and driver
// produce: a server that refuses connections, a session the server ends
// (57P01, what every open connection gets when PostgreSQL shuts down), a
// deadlock (40P01), a closed pool and a deadline are unavailability; a
// syntax error and a unique violation are not.
func TestUnavailableOnPostgres(t *testing.T) {
	dsn := sharedDSN(t, testkit.Postgres)
	ctx := context.Background()

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = closedPort(t)
	_, err = db.Open(ctx, u.String(), db.Options{})
	if err == nil || !db.IsUnavailable(err) {
		t.Fatalf("connection refused: %v (unavailable %v)", err, db.IsUnavailable(err))
	}

	bdb, admin := open(t, dsn), open(t, dsn)
	conn, err := bdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	var pid int
	if err := conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "SELECT pg_terminate_backend(?)", pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	_, err = conn.ExecContext(ctx, "SELECT 1")
	if err == nil || !db.IsUnavailable(err) {
		t.Fatalf("terminated session: %v (unavailable %v)", err, db.IsUnavailable(err))
	}
	t.Logf("terminated session answers %v", err)

	if _, err := bdb.ExecContext(ctx, "CREATE TABLE pair (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := bdb.ExecContext(ctx, "INSERT INTO pair VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
	if err := deadlock(ctx, bdb); err == nil || !db.IsUnavailable(err) {
		t.Fatalf("deadlock: %v (unavailable %v)", err, db.IsUnavailable(err))
	}

	_, err = bdb.ExecContext(ctx, "SELEKT 1")
	if err == nil || db.IsUnavailable(err) {
		t.Fatalf("syntax error classified unavailable: %v", err)
	}
	// 55000 is both a programming error (currval before nextval) and, with
	// its own message, a database an operator closed to connections.
	if _, err := bdb.ExecContext(ctx, "CREATE SEQUENCE seq_55000"); err != nil {
		t.Fatal(err)
	}
	_, err = bdb.ExecContext(ctx, "SELECT currval('seq_55000')")
	if err == nil || db.IsUnavailable(err) {
		t.Fatalf("currval before nextval classified unavailable: %v", err)
	}
	closedDB := strings.ReplaceAll(testkit.UniqueName("closed_"), "-", "_")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+closedDB+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+closedDB) })
	cu := *u
	cu.Host = strings.Split(dsnHost(t, dsn), "/")[0]
	cu.Path = "/" + closedDB
	_, err = db.Open(ctx, cu.String(), db.Options{})
	if err == nil || !db.IsUnavailable(err) {
		t.Fatalf("a database closed to connections: %v (unavailable %v)", err, db.IsUnavailable(err))
	}
	_, err = bdb.ExecContext(ctx, "INSERT INTO pair VALUES (1, 0)")
	if !db.IsUniqueViolation(err) || db.IsUnavailable(err) {
		t.Fatalf("unique violation: %v", err)
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = bdb.ExecContext(short, "SELECT pg_sleep(2)")
	if err == nil || !db.IsUnavailable(err) {
		t.Fatalf("deadline: %v", err)
	}

	closed := open(t, dsn)
	_ = closed.Close()
	_, err = closed.ExecContext(ctx, "SELECT 1")
	if err == nil || !db.IsUnavailable(err) {
		t.Fatalf("closed pool: %v", err)
	}
}

// deadlock makes two transactions wait for each other; PostgreSQL aborts one.
func deadlock(ctx context.Context, bdb *bun.DB) error {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	locked := make(chan struct{}, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "UPDATE pair SET v = v + 1 WHERE id = ?", i+1); err != nil {
					return err
				}
				locked <- struct{}{}
				for len(locked) < 2 {
					time.Sleep(5 * time.Millisecond)
				}
				_, err := tx.ExecContext(ctx, "UPDATE pair SET v = v + 1 WHERE id = ?", 2-i)
				return err
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// TestUnavailableOnSQLite: another process holding the write lock past the
// busy timeout (SQLITE_BUSY) is unavailability; a constraint error is not.
func TestUnavailableOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	bdb := open(t, "sqlite://"+path)
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	// A second handle that gives up at once instead of waiting 10 s.
	impatient, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = impatient.Close() }()
	tx, err := bdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_, err = impatient.ExecContext(ctx, "INSERT INTO t VALUES (2)")
	if err == nil || !db.IsUnavailable(err) {
		t.Fatalf("busy: %v (unavailable %v)", err, db.IsUnavailable(err))
	}
	t.Logf("busy database answers %v", err)
	_ = tx.Rollback()
	if _, err := bdb.ExecContext(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	_, err = bdb.ExecContext(ctx, "INSERT INTO t VALUES (3)")
	if !db.IsUniqueViolation(err) || db.IsUnavailable(err) {
		t.Fatalf("constraint: %v", err)
	}
	if db.IsUnavailable(context.Canceled) || db.IsUnavailable(nil) || db.IsUnavailable(errors.New("bun: something")) {
		t.Fatal("ordinary errors classified unavailable")
	}
}

// TestDeadPooledConnectionIsReplaced: after PostgreSQL ended the session of
// an idle pooled connection (a restart, a failover, an administrator), the
// next query gets a live connection instead of the dead one's EOF.
func TestDeadPooledConnectionIsReplaced(t *testing.T) {
	dsn := sharedDSN(t, testkit.Postgres)
	ctx := context.Background()
	bdb, err := db.Open(ctx, dsn, db.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bdb.Close() }()
	admin := open(t, dsn)
	for round := range 3 {
		var pid int
		if err := bdb.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := admin.ExecContext(ctx, "SELECT pg_terminate_backend(?)", pid); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the termination notice and FIN reach the idle socket
		var again int
		if err := bdb.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&again); err != nil {
			t.Fatalf("round %d: the dead pooled connection was handed out: %v", round, err)
		}
		if again == pid {
			t.Fatalf("round %d: same backend %d after its termination", round, pid)
		}
	}
}

// dsnHost answers the host:port of a DSN.
func dsnHost(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
