package procs

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// These tests change the process's GOMAXPROCS: they run one at a time and
// need two processors at least.
func needProcessors(t *testing.T) int {
	t.Helper()
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		t.Skipf("GOMAXPROCS is %d: nothing to govern", max)
	}
	return max
}

// waitFor polls cond for up to a generous bound: what is asserted is the
// state the governor reaches, not how soon.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached (GOMAXPROCS %d)", what, runtime.GOMAXPROCS(0))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type recorder struct {
	mu      sync.Mutex
	changes []Change
}

func (r *recorder) add(c Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
}

func (r *recorder) has(reason Reason, to int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.changes {
		if c.Reason == reason && c.To == to {
			return true
		}
	}
	return false
}

func start(t *testing.T) (*recorder, func()) {
	t.Helper()
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, rec.add) }()
	waitFor(t, "the governor running", func() bool { return active.Load() != nil })
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(func() {
		if active.Load() != nil {
			stop()
		}
	})
	return rec, stop
}

// An idle process is lowered to one processor; Raise gives it the default
// back at once; the end of Run leaves the runtime's default.
func TestRun_IdleGoesToOneRaiseRestoresAndStopLeavesTheDefault(t *testing.T) {
	max := needProcessors(t)
	idleBefore := testutil.ToFloat64(changesTotal.WithLabelValues(string(ReasonIdle)))
	rec, stop := start(t)

	waitFor(t, "lowered while idle", func() bool { return runtime.GOMAXPROCS(0) == 1 })
	if !rec.has(ReasonIdle, 1) || testutil.ToFloat64(changesTotal.WithLabelValues(string(ReasonIdle))) <= idleBefore {
		t.Fatalf("lowered without a change reported: %v", rec.changes)
	}

	Raise()
	if got := runtime.GOMAXPROCS(0); got != max || !rec.has(ReasonParallel, max) {
		t.Fatalf("after Raise: GOMAXPROCS %d, changes %v; want %d at once", got, rec.changes, max)
	}

	waitFor(t, "lowered again", func() bool { return runtime.GOMAXPROCS(0) == 1 })
	stop()
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("after Run returned: GOMAXPROCS %d; want the default %d", got, max)
	}
	// Without a governor, Poke and Raise do nothing.
	Poke()
	Raise()
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("Poke and Raise without a governor changed GOMAXPROCS to %d", got)
	}
}

// Work that keeps the one processor busy gets the others back, sampled by the
// governor's own timer (no requests here to call Poke), and gives them up
// again when it stops.
func TestRun_BusyProcessGetsItsProcessorsBack(t *testing.T) {
	max := needProcessors(t)
	rec, _ := start(t)
	waitFor(t, "lowered while idle", func() bool { return runtime.GOMAXPROCS(0) == 1 })

	var stop atomic.Bool
	var wg sync.WaitGroup
	for range max {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 1
			for !stop.Load() {
				for i := range 1000 {
					x = x*31 + i
				}
			}
			_ = x
		}()
	}
	waitFor(t, "raised under load", func() bool { return runtime.GOMAXPROCS(0) == max })
	if !rec.has(ReasonCPU, max) {
		t.Fatalf("raised without a cpu change reported: %v", rec.changes)
	}
	stop.Store(true)
	wg.Wait()
	waitFor(t, "lowered after the load", func() bool { return runtime.GOMAXPROCS(0) == 1 })
}

// Requests sample the process through Poke, at most once per MinInterval,
// and a second governor is refused.
func TestRun_PokeSamplesAndOneGovernorPerProcess(t *testing.T) {
	needProcessors(t)
	start(t)
	g := active.Load()
	next := g.next.Load()
	time.Sleep(2 * MinInterval)
	Poke()
	if after := g.next.Load(); after <= next {
		t.Fatalf("Poke after MinInterval did not sample (next %d, was %d)", after, next)
	}
	sampled := g.next.Load()
	Poke() // within MinInterval of the last sample
	if g.next.Load() != sampled {
		t.Fatal("Poke sampled again within MinInterval")
	}

	if err := Run(context.Background(), nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second Run: %v; want ErrRunning", err)
	}
}
