package bus_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/db"
	"github.com/agritrade/api/platform/testkit"
	"github.com/redis/go-redis/v9"
)

// pair checks that a publish on a reaches b's subscriber once and a's own
// subscriber once (local delivery, its echo ignored).
func pair(t *testing.T, a, b bus.Bus) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gotA, gotB := make(chan string, 4), make(chan string, 4)
	a.Subscribe("t", func(_ context.Context, p []byte) { gotA <- string(p) })
	b.Subscribe("t", func(_ context.Context, p []byte) { gotB <- string(p) })
	b.Subscribe("other", func(_ context.Context, p []byte) { t.Errorf("wrong topic delivered: %s", p) })
	for _, x := range []bus.Bus{a, b} {
		go func() { _ = x.Run(ctx) }()
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		if err := x.Ready(rctx); err != nil {
			t.Fatal(err)
		}
		rcancel()
	}
	start := time.Now()
	if err := a.Publish(ctx, "t", []byte(`{"module":"system"}`)); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan string{"publisher": gotA, "other replica": gotB} {
		select {
		case p := <-ch:
			if p != `{"module":"system"}` {
				t.Fatalf("%s got %s", name, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s got nothing", name)
		}
	}
	t.Logf("delivered across replicas in %s", time.Since(start))
	select {
	case p := <-gotA:
		t.Fatalf("publisher received its own echo: %s", p)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestPostgresBus(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	ctx := context.Background()
	d1, err := db.Open(ctx, dsn, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := db.Open(ctx, dsn, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := bus.NewPostgres(d1, nil), bus.NewPostgres(d2, nil)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close(); _ = d1.Close(); _ = d2.Close() })
	pair(t, a, b)
}

func TestRedisBus(t *testing.T) {
	url := os.Getenv("AGRITRADE_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/15"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Skipf("Redis tests skipped: no Redis at %s (%v); set AGRITRADE_TEST_REDIS_URL", url, err)
	}
	channel := "agritrade-test:" + t.Name() + ":" + time.Now().Format(time.RFC3339Nano)
	pair(t, bus.NewRedis(c, channel, nil), bus.NewRedis(c, channel, nil))
}

func TestMemoryBus(t *testing.T) {
	m := bus.NewMemory()
	got := 0
	m.Subscribe("t", func(context.Context, []byte) { got++ })
	if err := m.Publish(context.Background(), "t", []byte(`1`)); err != nil || got != 1 {
		t.Fatalf("delivered %d times (%v)", got, err)
	}
}
