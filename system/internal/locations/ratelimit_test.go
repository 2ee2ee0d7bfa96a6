package locations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/agritrade/api/platform/testkit"
	"github.com/agritrade/api/system"
	"github.com/redis/go-redis/v9"
)

// testRedisURL is the Redis the tests use: DB 14, away from real data.
const testRedisURL = "redis://127.0.0.1:6379/14"

// limitScenarios exhausts a burst of 3 over the four routes (one bucket per
// client IP for all of them), then expects 429 with Retry-After.
func limitScenarios(t *testing.T, s *testkit.Server) {
	t.Helper()
	reqs := []testkit.Request{
		get(search, "query", "york"),
		get(byCoordinates, "lat", "54", "lon", "-2"),
		get(byWords, "query", "apple.meadow.tractor"),
	}
	for i, r := range reqs {
		if res := s.Do(r); res.Status == http.StatusTooManyRequests {
			t.Fatalf("request %d of the burst limited: %s", i+1, res.Body)
		}
	}
	for _, r := range []testkit.Request{get(byID, "id", "pc:GB:SW1A1AA"), get(search, "query", "york")} {
		res := s.Do(r)
		if res.Status != http.StatusTooManyRequests {
			t.Fatalf("%s after the burst: %d, want 429", r.Path, res.Status)
		}
		if e := res.Error(t); e.Code != "rate_limited" {
			t.Fatalf("code %q, want rate_limited", e.Code)
		}
		// One request a second refills the bucket: the client waits one second.
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra != 1 {
			t.Fatalf("Retry-After %q, want 1", res.Header.Get("Retry-After"))
		}
	}
	// Another client has its own bucket.
	req := s.NewRequest(get(search, "query", "york"))
	req.RemoteAddr = "198.51.100.7:5555"
	if res := serve(s, req); res != http.StatusOK {
		t.Fatalf("another client IP: %d, want 200", res)
	}
}

func serve(s *testkit.Server, req *http.Request) int {
	rec := &statusRecorder{header: http.Header{}}
	s.App.Engine.ServeHTTP(rec, req)
	return rec.status
}

type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return len(b), nil
}
func (r *statusRecorder) WriteHeader(s int) { r.status = s }

func TestRateLimitMemory(t *testing.T) {
	s := newServer(t, testkit.DB(t, testkit.SQLite), func(c *config.Config) {
		c.RateLimit.PerMinute, c.RateLimit.Burst = 60, 3
	})
	if _, ok := s.Platform.RateLimit.(*ratelimit.Memory); !ok {
		t.Fatalf("limiter %T, want the in-process one by default", s.Platform.RateLimit)
	}
	limitScenarios(t, s)
}

func TestRateLimitRedis(t *testing.T) {
	opts, err := redis.ParseURL(testRedisURL)
	if err != nil {
		t.Fatal(err)
	}
	probe := redis.NewClient(opts)
	defer probe.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := probe.Ping(ctx).Err(); err != nil {
		t.Skipf("Redis rate-limit test skipped: no Redis at %s (%v)", testRedisURL, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "agritrade-test:locations:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		keys, _ := probe.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			probe.Del(context.Background(), keys...)
		}
	})
	s := testkit.NewServer(t, testkit.DB(t, testkit.SQLite), func(p *app.Platform) []module.Module {
		if _, ok := p.RateLimit.(*ratelimit.Redis); !ok {
			t.Errorf("limiter %T, want Redis with cache.backend redis", p.RateLimit)
		}
		// The configured limiter, with a key prefix of this test's own, so that
		// runs sharing the Redis database cannot meet.
		p.RateLimit = ratelimit.NewRedis(p.Redis, prefix, ratelimit.Rate{PerMinute: 60, Burst: 3})
		return []module.Module{system.New(p.Deps(system.Name))}
	}, testkit.Options{Configure: func(c *config.Config) {
		c.Cache.Backend = "redis"
		c.Redis.URL = testRedisURL
	}})
	limitScenarios(t, s)
	if n := probe.Exists(context.Background(), prefix+"locations:192.0.2.1").Val(); n != 1 {
		t.Fatalf("no bucket of the client in Redis under %s", prefix)
	}
}
