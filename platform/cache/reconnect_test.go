package cache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/testkit"
	"github.com/redis/go-redis/v9"
)

// clearAcrossReconnect is the failure of issue 11: replica B's subscription
// breaks (its connection killed on the server) and stays broken while
// replica A clears a key, so the broadcast of that clear never reaches B. B
// must still stop serving the old entry once its subscription is back, long
// before the entry's TTL (an hour here).
func clearAcrossReconnect(t *testing.T, busA, busB bus.Bus, cut func() (restore func())) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	mem := func() cache.Cache { return cache.NewMemory(cache.MemoryOptions{TTL: time.Hour}) }
	a, b := cache.NewReplicated(mem(), busA, nil), cache.NewReplicated(mem(), busB, nil)
	for _, x := range []bus.Bus{busA, busB} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = x.Run(ctx) }()
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := x.Ready(rctx); err != nil {
			rcancel()
			t.Fatal(err)
		}
		rcancel()
	}
	for _, c := range []cache.Cache{a, b} {
		if err := c.Set(ctx, "refdata:settings:GB", []byte("old"), 0); err != nil {
			t.Fatal(err)
		}
	}
	restore := cut()
	if n, err := a.Delete(ctx, "refdata:settings:GB"); err != nil || n != 1 {
		t.Fatalf("clear on A: %d %v", n, err)
	}
	// B heard nothing: the clear went out while it could not listen.
	if v, ok, _ := b.Get(ctx, "refdata:settings:GB"); !ok || string(v) != "old" {
		t.Fatalf("B lost the entry while cut off (%q %v): the scenario did not cut it off", v, ok)
	}
	restore()
	restored := time.Now()
	deadline := restored.Add(20 * time.Second)
	for {
		if _, ok, _ := b.Get(ctx, "refdata:settings:GB"); !ok {
			t.Logf("B dropped the entry %s after its connection could come back", time.Since(restored).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("B still serves the entry cleared while its subscription was down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// And clears reach B over its new subscription.
	if err := b.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, b, "k")
}

// TestClearAcrossReconnectPostgres: two replicas over the PostgreSQL bus;
// B's LISTEN connection is terminated (pg_terminate_backend) and B cannot
// reconnect while A clears.
func TestClearAcrossReconnectPostgres(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	appB := testkit.UniqueName("cache-b-")
	busA := bus.NewPostgres(testkit.PostgresAs(t, dsn, testkit.UniqueName("cache-a-")), nil)
	busB := bus.NewPostgres(testkit.PostgresAs(t, dsn, appB), nil)
	clearAcrossReconnect(t, busA, busB, func() func() { return testkit.CutPostgres(t, dsn, appB) })
}

// TestClearAcrossReconnectRedis: the same over the Redis bus; B's subscriber
// connection is killed (CLIENT KILL) and B cannot reconnect while A clears.
func TestClearAcrossReconnectRedis(t *testing.T) {
	optsB, cut := testkit.RedisUser(t)
	ca, cb := redis.NewClient(testkit.RedisOptions(t)), redis.NewClient(optsB)
	t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
	channel := testkit.UniqueName("agritrade-test:") + ":bus"
	clearAcrossReconnect(t, bus.NewRedis(ca, channel, nil), bus.NewRedis(cb, channel, nil), cut)
}
