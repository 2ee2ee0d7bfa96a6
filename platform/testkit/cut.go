package testkit

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/agritrade/api/platform/db"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
)

// RedisEnv points the tests at a Redis server; the default is the local one,
// database 15, so that tests never touch a deployment's keys. Tests share it
// with other runs: they use names of their own (UniqueName) and never FLUSHDB.
const RedisEnv = "AGRITRADE_TEST_REDIS_URL"

// RedisURL returns the URL of the test Redis, or skips when none answers.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(RedisEnv)
	if u == "" {
		u = "redis://127.0.0.1:6379/15"
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("%s: %v", RedisEnv, err)
	}
	c := redis.NewClient(opts)
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Skipf("Redis tests skipped: no Redis answers at %s (set %s): %v", u, RedisEnv, err)
	}
	return u
}

// RedisOptions returns the options of the test Redis, or skips when none answers.
func RedisOptions(t testing.TB) *redis.Options {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// UniqueName is a name no other test run uses: for Redis prefixes, channels,
// users and PostgreSQL application names.
func UniqueName(prefix string) string { return prefix + randomHex(6) }

// PostgresAs opens dsn with an application name, so that CutPostgres can find
// the connections of this pool (and of the bus listeners made over it).
func PostgresAs(t testing.TB, dsn, app string) *bun.DB {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	bdb, err := db.Open(context.Background(), u.String(), db.Options{MaxOpenConns: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bdb.Close() })
	return bdb
}

// CutPostgres kills every connection of application app to the database of
// dsn and keeps new connections to that database out until the returned
// restore runs (also at the end of the test). Connections of other
// applications that are already open keep working: another replica can still
// write and notify while app's replica cannot even reconnect.
func CutPostgres(t testing.TB, dsn, app string) (restore func()) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := u.Path[1:]
	admin, _ := PostgresAdminDSN(t)
	adb, err := db.Open(context.Background(), admin, db.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exec := func(q string, args ...any) {
		if _, err := adb.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS false")
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ? AND application_name = ?", name, app)
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true")
		_ = adb.Close()
	}
	t.Cleanup(restore)
	return restore
}

// RedisUser creates a Redis user of its own (removed at the end of the test)
// and answers the options to connect as it, and cut: it kills the user's
// connections and refuses new ones until the restore it answers runs.
// Connections of other users keep working.
func RedisUser(t testing.TB) (opts *redis.Options, cut func() (restore func())) {
	t.Helper()
	base := RedisOptions(t)
	admin := redis.NewClient(base)
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	user, pass := UniqueName("agritrade-test-"), randomHex(16)
	do := func(args ...any) {
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("redis %v: %v", args, err)
		}
	}
	do("ACL", "SETUSER", user, "on", ">"+pass, "~*", "&*", "+@all")
	t.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
	o := *base
	o.Username, o.Password = user, pass
	cut = func() func() {
		do("ACL", "SETUSER", user, "off")
		do("CLIENT", "KILL", "USER", user)
		return func() { do("ACL", "SETUSER", user, "on") }
	}
	return &o, cut
}
