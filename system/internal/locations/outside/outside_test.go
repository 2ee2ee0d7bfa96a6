package outside

import (
	"context"
	"testing"
	"time"

	"github.com/agritrade/api/platform/apierr"
)

// fakeClock drives a pacer without sleeping: sleeps advance it.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) pacer(interval, maxWait time.Duration) *pacer {
	p := newPacer(interval, maxWait)
	p.now = func() time.Time { return c.now }
	p.sleep = func(_ context.Context, d time.Duration) error {
		c.sleeps = append(c.sleeps, d)
		return nil
	}
	return p
}

func TestPacerSpacesRequests(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)}
	p := clock.pacer(time.Second, 5*time.Second)
	ctx := context.Background()
	// Three callers at the same instant: the first goes at once, the others
	// queue one second apart (Nominatim's one request a second).
	for i := 0; i < 3; i++ {
		if err := p.wait(ctx, "nominatim"); err != nil {
			t.Fatal(err)
		}
	}
	if len(clock.sleeps) != 2 || clock.sleeps[0] != time.Second || clock.sleeps[1] != 2*time.Second {
		t.Fatalf("sleeps %v, want [1s 2s]", clock.sleeps)
	}
	// After a quiet spell the next request goes at once.
	clock.now = clock.now.Add(10 * time.Second)
	clock.sleeps = nil
	if err := p.wait(ctx, "nominatim"); err != nil || len(clock.sleeps) != 0 {
		t.Fatalf("after a pause: sleeps %v err %v", clock.sleeps, err)
	}
}

func TestPacerRefusesLongQueues(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)}
	p := clock.pacer(time.Second, 2*time.Second)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := p.wait(ctx, "nominatim"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	err := p.wait(ctx, "nominatim")
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.CodeUnavailable || e.RetryAfter != 3 {
		t.Fatalf("fourth request: %v, want 503 with Retry-After 3", err)
	}
	// The refused request took no slot.
	clock.now = clock.now.Add(3 * time.Second)
	clock.sleeps = nil
	if err := p.wait(ctx, "nominatim"); err != nil || len(clock.sleeps) != 0 {
		t.Fatalf("after the queue drained: sleeps %v err %v", clock.sleeps, err)
	}
}

func TestPacerGivesUpWithTheRequest(t *testing.T) {
	p := newPacer(time.Hour, 2*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.wait(ctx, "photon"); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := p.wait(ctx, "photon"); !apierr.IsCode(err, apierr.CodeUnavailable) {
		t.Fatalf("cancelled wait: %v, want 503", err)
	}
}

func TestTTLCache(t *testing.T) {
	now := time.Date(2026, 11, 21, 15, 4, 5, 0, time.UTC)
	c := newTTLCache(time.Minute, 2)
	c.now = func() time.Time { return now }
	c.Set("a", []byte("1"))
	c.Set("b", []byte("2"))
	if v, ok := c.Get("a"); !ok || string(v) != "1" {
		t.Fatalf("a: %q %v", v, ok)
	}
	// b is now the least recently used: a third key evicts it.
	c.Set("c", []byte("3"))
	if _, ok := c.Get("b"); ok {
		t.Fatal("b survived beyond the size bound")
	}
	if c.Len() != 2 {
		t.Fatalf("%d entries, want 2", c.Len())
	}
	now = now.Add(61 * time.Second)
	if _, ok := c.Get("a"); ok {
		t.Fatal("a survived its TTL")
	}
	c.Set("c", []byte("4"))
	if v, ok := c.Get("c"); !ok || string(v) != "4" {
		t.Fatalf("c after update: %q %v", v, ok)
	}
}
