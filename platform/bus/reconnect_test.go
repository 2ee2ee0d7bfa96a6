package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/testkit"
	"github.com/redis/go-redis/v9"
)

// reconnects checks the promise of OnSubscribed: it runs when b's
// subscription first becomes live, and again after cut broke it, once
// messages reach b again; what is published after they ran arrives. When lost
// is set, what was published while b was cut off must not arrive (nothing
// replays it: that is why the handlers resync).
func reconnects(t *testing.T, a, b bus.Bus, lost bool, cut func() (restore func())) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var live atomic.Int32
	b.OnSubscribed(func(context.Context) { live.Add(1) })
	got := make(chan string, 16)
	b.Subscribe("t", func(_ context.Context, p []byte) { got <- string(p) })
	for _, x := range []bus.Bus{a, b} {
		go func() { _ = x.Run(ctx) }()
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := x.Ready(rctx); err != nil {
			t.Fatal(err)
		}
		rcancel()
	}
	if n := live.Load(); n != 1 {
		t.Fatalf("OnSubscribed ran %d times at start, want 1", n)
	}
	restore := cut()
	if err := a.Publish(ctx, "t", []byte(`"while cut off"`)); err != nil {
		t.Fatal(err)
	}
	restore()
	waitFor(t, "the subscription to come back", func() bool { return live.Load() == 2 })
	if err := a.Publish(ctx, "t", []byte(`"after"`)); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case p := <-got:
			if p == `"after"` {
				return
			}
			if lost {
				t.Fatalf("received %s; the message sent while cut off cannot arrive (nothing replays it)", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("nothing received after the reconnect")
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPostgresReconnect: b's LISTEN connection is terminated on the server
// (pg_terminate_backend) and b cannot reconnect while a notifies.
func TestPostgresReconnect(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	appB := testkit.UniqueName("bus-b-")
	a := bus.NewPostgres(testkit.PostgresAs(t, dsn, testkit.UniqueName("bus-a-")), nil)
	b := bus.NewPostgres(testkit.PostgresAs(t, dsn, appB), nil)
	reconnects(t, a, b, true, func() func() { return testkit.CutPostgres(t, dsn, appB) })
}

// TestRedisReconnect: b's subscriber connection is killed (CLIENT KILL) and b
// cannot reconnect while a publishes.
func TestRedisReconnect(t *testing.T) {
	optsB, cut := testkit.RedisUser(t)
	ca, cb := redis.NewClient(testkit.RedisOptions(t)), redis.NewClient(optsB)
	t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
	channel := testkit.UniqueName("agritrade-test:") + ":bus"
	reconnects(t, bus.NewRedis(ca, channel, nil), bus.NewRedis(cb, channel, nil), true, cut)
}
