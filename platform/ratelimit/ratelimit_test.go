package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/httpx"
	"github.com/agritrade/api/platform/ratelimit"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
)

// redisURL is the test Redis: DB 14 keeps the tests away from real data.
const redisURL = "redis://127.0.0.1:6379/14"

func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Skipf("Redis tests skipped: no Redis at %s (%v)", redisURL, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func uniquePrefix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	p := "agritrade-test:ratelimit:" + hex.EncodeToString(b) + ":"
	return p
}

func cleanPrefix(t *testing.T, c *redis.Client, prefix string) {
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
}

// backends runs fn on every backend with the same rate.
func backends(t *testing.T, rate ratelimit.Rate, fn func(t *testing.T, l ratelimit.Limiter)) {
	t.Run("memory", func(t *testing.T) { fn(t, ratelimit.NewMemory(rate)) })
	t.Run("redis", func(t *testing.T) {
		c := testRedis(t)
		p := uniquePrefix(t)
		cleanPrefix(t, c, p)
		fn(t, ratelimit.NewRedis(c, p, rate))
	})
}

func TestBurstThenDenied(t *testing.T) {
	backends(t, ratelimit.Rate{PerMinute: 60, Burst: 5}, func(t *testing.T, l ratelimit.Limiter) {
		ctx := context.Background()
		for i := 0; i < 5; i++ {
			ok, _, err := l.Allow(ctx, "k1")
			if err != nil || !ok {
				t.Fatalf("request %d: ok=%v err=%v, want allowed within the burst", i+1, ok, err)
			}
		}
		ok, wait, err := l.Allow(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Fatal("request 6 allowed, want denied after a burst of 5")
		}
		// One request a second refills: the wait is at most one interval.
		if wait <= 0 || wait > time.Second+50*time.Millisecond {
			t.Fatalf("retryAfter %v, want in (0, 1s]", wait)
		}
		// Other keys have buckets of their own.
		if ok, _, err := l.Allow(ctx, "k2"); err != nil || !ok {
			t.Fatalf("other key: ok=%v err=%v, want allowed", ok, err)
		}
	})
}

func TestRefill(t *testing.T) {
	// 1200 a minute: one request every 50 ms.
	backends(t, ratelimit.Rate{PerMinute: 1200, Burst: 1}, func(t *testing.T, l ratelimit.Limiter) {
		ctx := context.Background()
		if ok, _, _ := l.Allow(ctx, "k"); !ok {
			t.Fatal("first request denied")
		}
		ok, wait, _ := l.Allow(ctx, "k")
		if ok {
			t.Fatal("second request at once allowed with a burst of 1")
		}
		time.Sleep(wait + 10*time.Millisecond)
		if ok, _, err := l.Allow(ctx, "k"); err != nil || !ok {
			t.Fatalf("after the advertised wait: ok=%v err=%v, want allowed", ok, err)
		}
	})
}

func TestRedisSharedAcrossLimiters(t *testing.T) {
	c := testRedis(t)
	p := uniquePrefix(t)
	cleanPrefix(t, c, p)
	rate := ratelimit.Rate{PerMinute: 60, Burst: 2}
	a, b := ratelimit.NewRedis(c, p, rate), ratelimit.NewRedis(c, p, rate)
	ctx := context.Background()
	for _, l := range []ratelimit.Limiter{a, b} {
		if ok, _, err := l.Allow(ctx, "ip"); err != nil || !ok {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	}
	if ok, _, _ := a.Allow(ctx, "ip"); ok {
		t.Fatal("third request over two replicas allowed, want the bucket shared")
	}
	if ttl := c.PTTL(ctx, p+"ip").Val(); ttl <= 0 || ttl > 3*time.Second {
		t.Fatalf("key TTL %v, want it to expire once the bucket is full again", ttl)
	}
}

func TestRedisDownIsAnError(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	l := ratelimit.NewRedis(c, "x:", ratelimit.Rate{PerMinute: 60, Burst: 1})
	if _, _, err := l.Allow(context.Background(), "k"); err == nil {
		t.Fatal("no error from an unreachable Redis")
	}
}

func TestMemorySweepsIdleKeys(t *testing.T) {
	m := ratelimit.NewMemory(ratelimit.Rate{PerMinute: 600000, Burst: 1}) // 0.1 ms per request
	ctx := context.Background()
	for i := 0; i < 5000; i++ {
		_, _, _ = m.Allow(ctx, strconv.Itoa(i))
	}
	time.Sleep(5 * time.Millisecond)
	for i := 0; i < 4096; i++ {
		_, _, _ = m.Allow(ctx, "same")
	}
	// The sweep at call 8192 found the 5000 first keys' buckets full again.
	if n := m.Len(); n > 10 {
		t.Fatalf("%d keys kept, want the idle ones swept", n)
	}
}

func TestNewFromConfig(t *testing.T) {
	cfg := config.Default()
	if _, ok := ratelimit.New(cfg, nil).(*ratelimit.Memory); !ok {
		t.Fatal("default configuration: want the memory limiter")
	}
	cfg.Cache.Backend = "redis"
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, ok := ratelimit.New(cfg, c).(*ratelimit.Redis); !ok {
		t.Fatal("cache.backend redis: want the redis limiter")
	}
	cfg.RateLimit.PerMinute = 0
	if ok, _, _ := ratelimit.New(cfg, c).Allow(context.Background(), "k"); !ok {
		t.Fatal("per_minute 0: want unlimited")
	}
}

func TestMiddleware(t *testing.T) {
	backends(t, ratelimit.Rate{PerMinute: 60, Burst: 2}, func(t *testing.T, l ratelimit.Limiter) {
		e := httpx.NewEngine(httpx.Options{})
		e.GET("/limited", ratelimit.Middleware(l, "test"), func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		call := func(ip string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, "/limited", nil)
			req.RemoteAddr = ip + ":4242"
			// Proxies are not trusted: a forged header must not give a fresh bucket.
			req.Header.Set("X-Forwarded-For", "203.0.113.99")
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			return rec
		}
		for i := 0; i < 2; i++ {
			if rec := call("192.0.2.10"); rec.Code != http.StatusOK {
				t.Fatalf("request %d: %d", i+1, rec.Code)
			}
		}
		rec := call("192.0.2.10")
		if rec.Code != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429", rec.Code)
		}
		ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
		if err != nil || ra < 1 || ra > 2 {
			t.Fatalf("Retry-After %q, want 1 or 2 seconds", rec.Header().Get("Retry-After"))
		}
		var body struct {
			Status string `json:"status"`
			Code   string `json:"code"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if body.Status != "error" || body.Code != "rate_limited" {
			t.Fatalf("body %s, want error rate_limited", rec.Body)
		}
		if rec := call("192.0.2.11"); rec.Code != http.StatusOK {
			t.Fatalf("another client IP: %d, want 200", rec.Code)
		}
	})
}

func TestMiddlewareFailsOpen(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	e := httpx.NewEngine(httpx.Options{})
	e.GET("/x", ratelimit.Middleware(ratelimit.NewRedis(c, "x:", ratelimit.Rate{PerMinute: 1, Burst: 1}), "s"), func(c *gin.Context) { c.Status(http.StatusOK) })
	e.GET("/nil", ratelimit.Middleware(nil, "s"), func(c *gin.Context) { c.Status(http.StatusOK) })
	for _, p := range []string{"/x", "/x", "/nil"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d, want 200 while the limiter is down or absent", p, rec.Code)
		}
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {59 * time.Second, 59}} {
		if got := ratelimit.RetryAfterSeconds(c.in); got != c.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}
