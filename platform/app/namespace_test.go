package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/agritrade/api/platform/app"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/module"
	"github.com/agritrade/api/platform/settings"
	"github.com/agritrade/api/platform/testkit"
	"github.com/uptrace/bun"
)

// TestDeploymentsShareARedis: two deployments (each its own database, the
// first with two replicas) use one Redis under different redis.prefix values
// for the bus, the cache and the rate limits. Each deployment's replicas
// share all three; the deployments share none.
func TestDeploymentsShareARedis(t *testing.T) {
	url := testkit.RedisURL(t)
	replica := func(bdb *bun.DB, prefix string) *testkit.Server {
		s := testkit.NewServer(t, bdb, func(*app.Platform) []module.Module { return nil }, testkit.Options{NoValidate: true, Configure: func(c *config.Config) {
			c.Redis.URL, c.Redis.Prefix = url, prefix
			c.Bus.Backend, c.Cache.Backend = "redis", "redis"
			c.RateLimit.PerMinute, c.RateLimit.Burst = 60, 2
		}})
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Platform.Bus.Ready(rctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	p1, p2 := testkit.UniqueName("agritrade-test:")+":", testkit.UniqueName("agritrade-test:")+":"
	db1 := testkit.DB(t, testkit.SQLite)
	a1, a2 := replica(db1, p1), replica(db1, p1)
	b := replica(testkit.DB(t, testkit.SQLite), p2)
	ctx := context.Background()
	t.Cleanup(func() {
		_, _ = a1.Platform.Cache.Flush(context.Background())
		_, _ = b.Platform.Cache.Flush(context.Background())
	})

	// Log settings: a1's change reaches a2 over the bus, never b.
	level := "trace"
	var req settings.Request
	req.Logging = &struct {
		Level  *string `json:"level"`
		Filter *string `json:"filter"`
	}{Level: &level}
	if _, err := a1.Platform.Settings.Put(ctx, "logistics", "admin-1", req); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a2.Platform.Logs.Module("logistics").Settings().Level != level {
		if time.Now().After(deadline) {
			t.Fatal("the other replica of the deployment did not take the change")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Redis hands a message to every subscriber of its channel at once: had b
	// listened on a1's channel, it would have the change as a2 does.
	if got := b.Platform.Logs.Module("logistics").Settings().Level; got == level {
		t.Fatal("the other deployment took the change")
	}

	// Cache: the same key is two entries; a flush of one deployment leaves the other's.
	if err := a1.Platform.Cache.Set(ctx, "refdata:countries", []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Platform.Cache.Set(ctx, "refdata:countries", []byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := a2.Platform.Cache.Get(ctx, "refdata:countries"); !ok || string(v) != "one" {
		t.Fatalf("the deployment's other replica reads %q %v", v, ok)
	}
	if n, err := a1.Platform.Cache.Flush(ctx); err != nil || n != 1 {
		t.Fatalf("flush removed %d (%v), want the deployment's 1", n, err)
	}
	if v, ok, _ := b.Platform.Cache.Get(ctx, "refdata:countries"); !ok || string(v) != "two" {
		t.Fatalf("the other deployment's entry is %q %v after the flush", v, ok)
	}
	if n, err := a1.Platform.Redis.Exists(ctx, p1+"cache:refdata:countries", p2+"cache:refdata:countries").Result(); err != nil || n != 1 {
		t.Fatalf("cache keys under the prefixes: %d %v", n, err)
	}

	// Rate limits: a1 and a2 share a bucket of 2; b has its own.
	key := "locations:203.0.113.7"
	allow := func(s *testkit.Server) bool {
		ok, _, err := s.Platform.RateLimit.Allow(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !allow(a1) || !allow(a2) || allow(a1) {
		t.Fatal("the deployment's replicas do not share one bucket of 2")
	}
	for i, want := range []bool{true, true, false} {
		if got := allow(b); got != want {
			t.Fatalf("the other deployment's request %d: allowed %v, want %v (a full bucket of its own)", i+1, got, want)
		}
	}
	if n, err := a1.Platform.Redis.Exists(ctx, p1+"ratelimit:"+key, p2+"ratelimit:"+key).Result(); err != nil || n != 2 {
		t.Fatalf("rate-limit keys under the prefixes: %d %v", n, err)
	}
	t.Cleanup(func() {
		_ = a1.Platform.Redis.Del(context.Background(), p1+"ratelimit:"+key, p2+"ratelimit:"+key).Err()
	})
}
