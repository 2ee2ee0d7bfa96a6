package cache_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/cache"
	"github.com/agritrade/api/platform/config"
	"github.com/redis/go-redis/v9"
)

// RedisEnv points the tests at a Redis server; the default is the local one,
// database 15, so that tests never touch a deployment's keys.
const RedisEnv = "AGRITRADE_TEST_REDIS_URL"

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv(RedisEnv)
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("%s: %v", RedisEnv, err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Skipf("Redis tests skipped: no Redis answers at %s (set %s): %v", url, RedisEnv, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func uniquePrefix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "agritrade-test:" + hex.EncodeToString(b) + ":"
}

// conformance checks the behaviour every backend promises.
func conformance(t *testing.T, c cache.Cache) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := c.Get(ctx, "missing"); err != nil || ok {
		t.Fatalf("get missing: ok=%v err=%v", ok, err)
	}
	must(c.Set(ctx, "refdata:settings:all", []byte("A"), 0))
	must(c.Set(ctx, "refdata:settings:GB", []byte("B"), time.Minute))
	must(c.Set(ctx, "refdata:countries", []byte("C"), 0))
	must(c.Set(ctx, "loads:1", []byte("D"), 0))
	must(c.Set(ctx, "odd*[key]?", []byte("E"), 0))
	v, ok, err := c.Get(ctx, "refdata:settings:GB")
	if err != nil || !ok || string(v) != "B" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}
	must(c.Set(ctx, "refdata:settings:GB", []byte("B2"), 0))
	if v, _, _ := c.Get(ctx, "refdata:settings:GB"); string(v) != "B2" {
		t.Fatalf("overwrite: %q", v)
	}
	n, err := c.Delete(ctx, "refdata:countries", "never-set")
	if err != nil || n != 1 {
		t.Fatalf("delete: %d %v, want 1", n, err)
	}
	if _, ok, _ := c.Get(ctx, "refdata:countries"); ok {
		t.Fatal("deleted key still there")
	}
	// A glob character in a prefix matches literally.
	if n, err := c.DeletePrefix(ctx, "odd*"); err != nil || n != 1 {
		t.Fatalf("delete prefix with glob characters: %d %v, want 1", n, err)
	}
	if n, err := c.DeletePrefix(ctx, "*"); err != nil || n != 0 {
		t.Fatalf("'*' must be literal: %d %v", n, err)
	}
	n, err = c.DeletePrefix(ctx, "refdata:settings:")
	if err != nil || n != 2 {
		t.Fatalf("delete prefix: %d %v, want 2", n, err)
	}
	if _, ok, _ := c.Get(ctx, "loads:1"); !ok {
		t.Fatal("a key outside the prefix went")
	}
	n, err = c.Flush(ctx)
	if err != nil || n != 1 {
		t.Fatalf("flush: %d %v, want 1", n, err)
	}
	if _, ok, _ := c.Get(ctx, "loads:1"); ok {
		t.Fatal("flush left a key")
	}
}

func TestMemoryConformance(t *testing.T) {
	conformance(t, cache.NewMemory(cache.MemoryOptions{}))
}

func TestRedisConformance(t *testing.T) {
	client := redisClient(t)
	prefix := uniquePrefix(t)
	// A key outside the namespace must survive Flush.
	outside := prefix[:len(prefix)-1] + "-outside"
	if err := client.Set(context.Background(), outside, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Del(context.Background(), outside) })
	conformance(t, cache.NewRedis(client, prefix, time.Minute))
	if n, _ := client.Exists(context.Background(), outside).Result(); n != 1 {
		t.Fatal("Flush removed a key outside the cache namespace")
	}
}

func TestRedisTTLAndManyKeys(t *testing.T) {
	client := redisClient(t)
	ctx := context.Background()
	prefix := uniquePrefix(t)
	c := cache.NewRedis(client, prefix, time.Minute)
	if err := c.Set(ctx, "short", []byte("x"), 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ttl, err := client.PTTL(ctx, prefix+"short").Result()
	if err != nil || ttl <= 0 || ttl > 1500*time.Millisecond {
		t.Fatalf("ttl %v %v", ttl, err)
	}
	if err := c.Set(ctx, "default", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := client.PTTL(ctx, prefix+"default").Result(); ttl <= 50*time.Second || ttl > time.Minute {
		t.Fatalf("default ttl %v, want about a minute", ttl)
	}
	// More keys than one SCAN batch, so DeletePrefix must follow the cursor.
	keys := make([]string, 1234)
	pipe := client.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("bulk:%04d", i)
		pipe.Set(ctx, prefix+keys[i], "v", time.Minute)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := c.DeletePrefix(ctx, "bulk:")
	if err != nil || n != len(keys) {
		t.Fatalf("delete prefix: %d %v, want %d", n, err, len(keys))
	}
	if _, err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryExpiry(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	m := cache.NewMemory(cache.MemoryOptions{TTL: time.Minute, Now: clock})
	ctx := context.Background()
	_ = m.Set(ctx, "default", []byte("a"), 0)
	_ = m.Set(ctx, "long", []byte("b"), time.Hour)
	advance(59 * time.Second)
	if _, ok, _ := m.Get(ctx, "default"); !ok {
		t.Fatal("expired too early")
	}
	advance(2 * time.Second)
	if _, ok, _ := m.Get(ctx, "default"); ok {
		t.Fatal("default TTL not applied")
	}
	if _, ok, _ := m.Get(ctx, "long"); !ok {
		t.Fatal("explicit TTL not applied")
	}
	_ = m.Set(ctx, "gone", []byte("c"), time.Second)
	advance(2 * time.Second)
	// An expired entry is not counted as removed.
	if n, _ := m.Delete(ctx, "gone", "long"); n != 1 {
		t.Fatalf("delete counted %d, want 1", n)
	}
}

func TestMemoryBounds(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(cache.MemoryOptions{MaxEntries: 3})
	for _, k := range []string{"a", "b", "c"} {
		_ = m.Set(ctx, k, []byte(k), 0)
	}
	_, _, _ = m.Get(ctx, "a") // a is now the most recently used
	_ = m.Set(ctx, "d", []byte("d"), 0)
	if m.Len() != 3 {
		t.Fatalf("len %d, want 3", m.Len())
	}
	if _, ok, _ := m.Get(ctx, "b"); ok {
		t.Fatal("the least recently used entry was not evicted")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok, _ := m.Get(ctx, k); !ok {
			t.Fatalf("%s evicted", k)
		}
	}

	bySize := cache.NewMemory(cache.MemoryOptions{MaxBytes: 100})
	_ = bySize.Set(ctx, "k1", make([]byte, 40), 0)
	_ = bySize.Set(ctx, "k2", make([]byte, 40), 0)
	_ = bySize.Set(ctx, "k3", make([]byte, 40), 0)
	if _, ok, _ := bySize.Get(ctx, "k1"); ok {
		t.Fatal("byte bound not enforced")
	}
	_ = bySize.Set(ctx, "huge", make([]byte, 500), 0)
	if _, ok, _ := bySize.Get(ctx, "huge"); ok {
		t.Fatal("a value above the byte bound was stored")
	}
	if _, ok, _ := bySize.Get(ctx, "k3"); !ok {
		t.Fatal("storing an oversized value evicted others")
	}
}

func TestMemoryCopies(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(cache.MemoryOptions{})
	buf := []byte("hello")
	_ = m.Set(ctx, "k", buf, 0)
	buf[0] = 'J'
	v, _, _ := m.Get(ctx, "k")
	if string(v) != "hello" {
		t.Fatalf("Set kept the caller's buffer: %q", v)
	}
	_ = append(v, '!') // cap == len: reallocates, the cache is untouched
	if v2, _, _ := m.Get(ctx, "k"); string(v2) != "hello" {
		t.Fatalf("append wrote into the cache: %q", v2)
	}
}

func TestMemoryConcurrent(t *testing.T) {
	ctx := context.Background()
	m := cache.NewMemory(cache.MemoryOptions{MaxEntries: 50})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := fmt.Sprintf("k%d", (g*7+i)%80)
				_ = m.Set(ctx, k, []byte(k), 0)
				_, _, _ = m.Get(ctx, k)
				if i%50 == 0 {
					_, _ = m.DeletePrefix(ctx, "k1")
				}
			}
		}(g)
	}
	wg.Wait()
	if m.Len() > 50 {
		t.Fatalf("len %d over the bound", m.Len())
	}
}

// TestReplicatedMemoryBus: two replicas on one in-process bus; removals on one
// reach the other, reads and writes stay local.
func TestReplicatedMemoryBus(t *testing.T) {
	b := bus.NewMemory()
	replicas(t, b, b)
}

// TestReplicatedRedisBus: the same over real Redis pub/sub, one bus per replica.
func TestReplicatedRedisBus(t *testing.T) {
	client := redisClient(t)
	channel := uniquePrefix(t) + "bus"
	b1 := bus.NewRedis(client, channel, nil)
	b2 := bus.NewRedis(client, channel, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, b := range []*bus.Redis{b1, b2} {
		wg.Add(1)
		go func(b *bus.Redis) { defer wg.Done(); _ = b.Run(ctx) }(b)
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, b := range []*bus.Redis{b1, b2} {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		if err := b.Ready(rctx); err != nil {
			rcancel()
			t.Fatal(err)
		}
		rcancel()
	}
	replicas(t, b1, b2)
}

func replicas(t *testing.T, b1, b2 bus.Bus) {
	ctx := context.Background()
	a := cache.NewReplicated(cache.NewMemory(cache.MemoryOptions{}), b1, nil)
	b := cache.NewReplicated(cache.NewMemory(cache.MemoryOptions{}), b2, nil)
	for _, c := range []cache.Cache{a, b} {
		for _, k := range []string{"refdata:settings:all", "refdata:settings:GB", "loads:x", "keep"} {
			_ = c.Set(ctx, k, []byte("v"), 0)
		}
	}
	if _, ok, _ := a.Get(ctx, "keep"); !ok {
		t.Fatal("local set failed")
	}
	n, err := a.DeletePrefix(ctx, "refdata:")
	if err != nil || n != 2 {
		t.Fatalf("delete prefix counted %d (%v), want 2 (this replica's)", n, err)
	}
	waitGone(t, b, "refdata:settings:all", "refdata:settings:GB")
	if n, err := b.Delete(ctx, "loads:x"); err != nil || n != 1 {
		t.Fatalf("delete %d %v", n, err)
	}
	waitGone(t, a, "loads:x")
	if _, ok, _ := a.Get(ctx, "keep"); !ok {
		t.Fatal("an unrelated key went")
	}
	// Many long keys: the invalidation is split below the bus payload limit.
	var many []string
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("bulk:%03d:%s", i, string(make([]byte, 40)))
		many = append(many, k)
		_ = a.Set(ctx, k, []byte("v"), 0)
		_ = b.Set(ctx, k, []byte("v"), 0)
	}
	if n, err := a.Delete(ctx, many...); err != nil || n != len(many) {
		t.Fatalf("bulk delete %d %v", n, err)
	}
	waitGone(t, b, many...)
	if _, err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitGone(t, a, "keep")
}

func waitGone(t *testing.T, c cache.Cache, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, k := range keys {
			if _, ok, _ := c.Get(context.Background(), k); ok {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(left)
			t.Fatalf("%d keys still cached on the other replica, e.g. %q", len(left), left[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOpen(t *testing.T) {
	if _, err := cache.Open(config.Cache{Backend: "memcached"}, nil, nil, nil); err == nil {
		t.Fatal("unknown backend accepted")
	}
	if _, err := cache.Open(config.Cache{Backend: "redis"}, nil, nil, nil); err == nil {
		t.Fatal("redis without a client accepted")
	}
	c, err := cache.Open(config.Cache{}, nil, bus.NewMemory(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*cache.Replicated); !ok {
		t.Fatalf("memory backend with a bus is %T, want *cache.Replicated", c)
	}
}
