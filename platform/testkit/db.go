// Package testkit is the shared test harness: fresh databases on both dialects,
// the real gin engine driven over HTTP with real tokens, and validation of every
// response against the OpenAPI documents.
package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Dialect names a database engine the suites run on.
type Dialect string

// The dialects every store and feature test runs on.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// PostgresEnv is the variable that points the tests at a PostgreSQL server.
const PostgresEnv = "AGRITRADE_TEST_POSTGRES_DSN"

// ForEachDialect runs fn as a subtest per dialect with a fresh database each:
// SQLite always; PostgreSQL from AGRITRADE_TEST_POSTGRES_DSN, else a
// testcontainers PostgreSQL when a Docker engine answers, else a skip that says why.
func ForEachDialect(t *testing.T, fn func(t *testing.T, db *bun.DB)) {
	t.Helper()
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) { fn(t, DB(t, d)) })
	}
}

// DB returns a fresh, empty database of the dialect, removed when the test ends.
func DB(t testing.TB, d Dialect) *bun.DB {
	t.Helper()
	switch d {
	case SQLite:
		return sqliteDB(t)
	case Postgres:
		return postgresDB(t)
	default:
		t.Fatalf("unknown dialect %q", d)
		return nil
	}
}

func sqliteDB(t testing.TB) *bun.DB {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	bdb, err := db.Open(context.Background(), dsn, db.Options{})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	return bdb
}

// PostgresAdminDSN returns the DSN of a server the tests may create databases
// on, or "" with the reason there is none.
func PostgresAdminDSN(t testing.TB) (dsn, reason string) {
	if dsn := os.Getenv(PostgresEnv); dsn != "" {
		return dsn, ""
	}
	containerOnce.Do(startContainer)
	if containerErr != nil {
		return "", fmt.Sprintf("PostgreSQL tests skipped: %s is not set and no Docker engine answered for testcontainers (%v)", PostgresEnv, containerErr)
	}
	return containerDSN, ""
}

var (
	containerOnce sync.Once
	containerDSN  string
	containerErr  error
)

func startContainer() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer func() {
		// testcontainers panics on some engine-less set-ups; that is a "no".
		if r := recover(); r != nil {
			containerErr = fmt.Errorf("testcontainers: %v", r)
		}
	}()
	c, err := tcpostgres.Run(ctx, "postgres:16-alpine",
		tcpostgres.WithDatabase("postgres"), tcpostgres.WithUsername("postgres"), tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies())
	if err != nil {
		containerErr = err
		return
	}
	containerDSN, containerErr = c.ConnectionString(ctx, "sslmode=disable")
}

func postgresDB(t testing.TB) *bun.DB {
	t.Helper()
	admin, reason := PostgresAdminDSN(t)
	if admin == "" {
		if tt, ok := t.(*testing.T); ok {
			testcontainers.SkipIfProviderIsNotHealthy(tt)
		}
		t.Skip(reason)
	}
	ctx := context.Background()
	adminDB, err := db.Open(ctx, admin, db.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	defer func() { _ = adminDB.Close() }()
	name := "agritrade_test_" + randomHex(6)
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	bdb, err := db.Open(ctx, dsn, db.Options{MaxOpenConns: 10})
	if err != nil {
		t.Fatalf("open test database: %v", err)
	}
	t.Cleanup(func() {
		_ = bdb.Close()
		dropDB, err := db.Open(context.Background(), admin, db.Options{MaxOpenConns: 1})
		if err != nil {
			return
		}
		defer func() { _ = dropDB.Close() }()
		_, _ = dropDB.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return bdb
}

// PostgresDSN returns the DSN of a fresh PostgreSQL database (dropped after the
// test) for tests that start processes of their own, or skips.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	bdb := postgresDB(t)
	var name string
	if err := bdb.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, _ := PostgresAdminDSN(t)
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

func withDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return strings.ToLower(hex.EncodeToString(b))
}

// SecondPool opens another connection pool on the database of bdb (closed
// when the test ends): what a second replica holds. Servers on one *bun.DB
// share the process's commit hooks; a replica on a pool of its own hears of
// the other's commits only through the bus, as in production.
func SecondPool(t testing.TB, bdb *bun.DB) *bun.DB {
	t.Helper()
	ctx := context.Background()
	var dsn string
	if bdb.Dialect().Name() == dialect.PG {
		var name string
		if err := bdb.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		admin, _ := PostgresAdminDSN(t)
		var err error
		if dsn, err = withDatabase(admin, name); err != nil {
			t.Fatal(err)
		}
	} else {
		var file string
		if err := bdb.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
			t.Fatal(err)
		}
		dsn = "sqlite://" + file
	}
	pool, err := db.Open(ctx, dsn, db.Options{MaxOpenConns: 10})
	if err != nil {
		t.Fatalf("open a second pool: %v", err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	return pool
}
