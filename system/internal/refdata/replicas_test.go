package refdata_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"
)

// redisURL returns the test Redis (database 15 unless AGRITRADE_TEST_REDIS_URL
// says otherwise), or skips when none answers.
func redisURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("AGRITRADE_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Skipf("Redis tests skipped: no Redis answers at %s (set AGRITRADE_TEST_REDIS_URL): %v", url, err)
	}
	return url
}

func uniquePrefix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "agritrade-test:" + hex.EncodeToString(b) + ":"
}

func waitReady(t *testing.T, servers ...*testkit.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Platform.Bus.Ready(ctx); err != nil {
			t.Fatalf("bus not ready: %v", err)
		}
	}
}

// eventually polls cond for up to five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// clearedEverywhere plays the scenario on two replicas over one database: both
// cache the country list, the data changes behind them, one replica is asked
// to clear, and both serve the new data.
func clearedEverywhere(t *testing.T, bdb *bun.DB, a, b *testkit.Server) {
	t.Helper()
	for _, s := range []*testkit.Server{a, b} {
		if got := countryName(t, s, "DE"); got != "Germany" {
			t.Fatalf("DE is %q", got)
		}
	}
	execSQL(t, bdb, "UPDATE refdata_countries SET name = ? WHERE iso = ?", "Deutschland", "DE")
	for _, s := range []*testkit.Server{a, b} {
		if got := countryName(t, s, "DE"); got != "Germany" {
			t.Fatalf("not served from the cache: %q", got)
		}
	}
	r := a.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/cache", Token: a.Token(testkit.Admin), JSON: map[string]any{"prefixes": []string{"refdata:"}}})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "removed 1 cache entry") {
		t.Fatalf("clear: %d %s", r.Status, r.Body)
	}
	if got := countryName(t, a, "DE"); got != "Deutschland" {
		t.Fatalf("the replica that cleared serves %q", got)
	}
	eventually(t, "the other replica to drop its entry", func() bool { return countryName(t, b, "DE") == "Deutschland" })
}

// TestCacheClearAcrossReplicasPostgres: two replicas with their own memory
// caches and their own connections to one PostgreSQL database, broadcasting
// through LISTEN/NOTIFY.
func TestCacheClearAcrossReplicasPostgres(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	open := func() *bun.DB {
		bdb, err := db.Open(context.Background(), dsn, db.Options{MaxOpenConns: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = bdb.Close() })
		return bdb
	}
	opts := testkit.Options{Configure: func(c *config.Config) {
		c.DB.DSN = dsn
		c.Bus.Backend = "postgres"
		c.Cache.Backend = "memory"
	}}
	dbA, dbB := open(), open()
	a, _ := newServer(t, dbA, opts)
	b, _ := newServer(t, dbB, opts)
	waitReady(t, a, b)
	clearedEverywhere(t, dbA, a, b)
}

// TestCacheClearAcrossReplicasRedis: two replicas sharing a Redis cache and
// the Redis bus, on both dialects.
func TestCacheClearAcrossReplicasRedis(t *testing.T) {
	url := redisURL(t)
	testkit.ForEachDialect(t, func(t *testing.T, bdb *bun.DB) {
		prefix := uniquePrefix(t)
		opts := testkit.Options{Configure: func(c *config.Config) {
			c.Redis.URL = url
			c.Cache.Backend = "redis"
			c.Cache.Prefix = prefix
			c.Bus.Backend = "redis"
		}}
		a, _ := newServer(t, bdb, opts)
		b, _ := newServer(t, bdb, opts)
		waitReady(t, a, b)
		clearedEverywhere(t, bdb, a, b)
		// The entries live in Redis under the prefix.
		_ = countryName(t, a, "DE")
		if _, ok, err := b.Platform.Cache.Get(context.Background(), "refdata:countries"); err != nil || !ok {
			t.Fatalf("replica B does not see replica A's entry: %v %v", ok, err)
		}
		if n, err := a.Platform.Redis.Exists(context.Background(), prefix+"refdata:countries").Result(); err != nil || n != 1 {
			t.Fatalf("key not under the prefix: %d %v", n, err)
		}
		t.Cleanup(func() { _, _ = a.Platform.Cache.Flush(context.Background()) })
	})
}

// jwksServer serves one RSA public key and counts the fetches.
func jwksServer(t *testing.T, key *rsa.PrivateKey, kid string) (*httptest.Server, *atomic.Int32) {
	var fetches atomic.Int32
	body, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &fetches
}

// TestSecretsReloadAcrossReplicas: in OIDC mode, secrets: true makes every
// replica fetch its provider's key set again.
func TestSecretsReloadAcrossReplicas(t *testing.T) {
	url := redisURL(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const kid = "test-key-1"
	jwksA, fetchesA := jwksServer(t, key, kid)
	jwksB, fetchesB := jwksServer(t, key, kid)
	bdb := testkit.DB(t, testkit.SQLite)
	server := func(jwksURL string) *testkit.Server {
		s, _ := newServer(t, bdb, testkit.Options{Configure: func(c *config.Config) {
			c.Auth.JWKSURL = jwksURL
			c.Auth.Issuer = "https://id.example"
			c.Redis.URL = url
			c.Bus.Backend = "redis"
		}})
		return s
	}
	a, b := server(jwksA.URL), server(jwksB.URL)
	waitReady(t, a, b)
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"sub": "admin-oidc", "name": "Olive OIDC", "roles": []string{"admin"}, "iss": "https://id.example",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	})
	tok.Header["kid"] = kid
	token, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	// The first call verifies the token: one fetch by replica A.
	r := a.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/settings/GB", Token: token})
	if r.Status != http.StatusOK {
		t.Fatalf("OIDC token refused: %d %s", r.Status, r.Body)
	}
	beforeA, beforeB := fetchesA.Load(), fetchesB.Load()
	r = a.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/cache", Token: token, JSON: map[string]any{"secrets": true}})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "reloaded secrets") {
		t.Fatalf("clear: %d %s", r.Status, r.Body)
	}
	if got := fetchesA.Load(); got != beforeA+1 {
		t.Fatalf("replica A fetched its key set %d times, want one more than %d", got, beforeA)
	}
	eventually(t, "replica B to reload its key set", func() bool { return fetchesB.Load() == beforeB+1 })

	// A provider that is down: 503, and the cache is left as it was.
	_ = a.Do(testkit.Request{Method: http.MethodGet, Path: "/system/v1/countries"})
	jwksA.Close()
	r = a.Do(testkit.Request{Method: http.MethodPost, Path: "/system/v1/cache", Token: token, JSON: map[string]any{"secrets": true, "flush": true}})
	if r.Status != http.StatusServiceUnavailable || r.Error(t).Code != "unavailable" {
		t.Fatalf("provider down: %d %s", r.Status, r.Body)
	}
	if _, ok, _ := a.Platform.Cache.Get(context.Background(), "refdata:countries"); !ok {
		t.Fatal("a failed secrets reload still flushed the cache")
	}
}
