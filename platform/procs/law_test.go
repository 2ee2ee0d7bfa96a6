package procs

import (
	"testing"
	"time"
)

// load drives a Law with samples every step: util cores of CPU, reqsPerS
// requests a second, and per second waitsPerS sampled scheduling waits of
// which a share slowShare took slowWait or more.
type load struct {
	util      float64
	reqsPerS  float64
	waitsPerS float64
	slowShare float64
}

type driver struct {
	t    *testing.T
	law  *Law
	step time.Duration
	s    Sample
	// fractional counts carried from step to step
	waits, slow, reqs float64
}

func newDriver(t *testing.T, max int) *driver {
	t.Helper()
	l, err := NewLaw(max)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, law: l, step: 10 * time.Millisecond, s: Sample{Wall: time.Hour}}
	if lvl, why := l.Step(d.s); lvl != max || why != "" {
		t.Fatalf("first sample: level %d %q; want %d unchanged", lvl, why, max)
	}
	return d
}

// run feeds l for dur and answers the changes it made, in order.
func (d *driver) run(l load, dur time.Duration) []Change {
	var changes []Change
	for elapsed := time.Duration(0); elapsed < dur; elapsed += d.step {
		d.s.Wall += d.step
		d.s.CPU += time.Duration(l.util * float64(d.step))
		d.waits += l.waitsPerS * d.step.Seconds()
		d.slow += l.waitsPerS * l.slowShare * d.step.Seconds()
		d.reqs += l.reqsPerS * d.step.Seconds()
		w, s, r := uint64(d.waits), uint64(d.slow), uint64(d.reqs)
		d.waits -= float64(w)
		d.slow -= float64(s)
		d.reqs -= float64(r)
		d.s.Waits += w
		d.s.Slow += s
		d.s.Requests += r
		from := d.law.Level()
		if to, why := d.law.Step(d.s); why != "" {
			changes = append(changes, Change{From: from, To: to, Reason: why})
		}
	}
	return changes
}

// until feeds l until the law changes the level, for at most max, and
// answers the change and the (simulated) time it took.
func (d *driver) until(l load, max time.Duration) (Change, time.Duration) {
	for elapsed := d.step; elapsed <= max; elapsed += d.step {
		if c := d.run(l, d.step); len(c) > 0 {
			return c[0], elapsed
		}
	}
	return Change{}, max
}

func (d *driver) expect(got []Change, want ...Change) {
	d.t.Helper()
	if len(got) != len(want) {
		d.t.Fatalf("changes %v; want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			d.t.Fatalf("changes %v; want %v", got, want)
		}
	}
}

// The loads measured on the 2-core machine (package comment): the settings
// document in a closed loop (~50 µs a request), listing creates at ~950 a
// second (~500 µs), searches of ~3 ms at ~40 a second (which overlap now and
// then), cheap requests beside background work that queues, and nothing.
var (
	cheapRequests = load{util: 0.42, reqsPerS: 8000, waitsPerS: 4000, slowShare: 0.001}
	creates       = load{util: 0.48, reqsPerS: 950, waitsPerS: 1100, slowShare: 0.001}
	fewSearches   = load{util: 0.14, reqsPerS: 40, waitsPerS: 55, slowShare: 0.3}
	queueing      = load{util: 0.15, reqsPerS: 2000, waitsPerS: 55, slowShare: 0.3}
	idle          = load{util: 0.005, waitsPerS: 8}
	saturating    = load{util: 0.98, waitsPerS: 4000}
)

func TestLaw_LightLoadRunsOnOneProcessorAfterASecond(t *testing.T) {
	for name, l := range map[string]load{"idle": idle, "cheap requests": cheapRequests} {
		t.Run(name, func(t *testing.T) {
			d := newDriver(t, 2)
			d.expect(d.run(l, 990*time.Millisecond)) // a level is kept a second at least
			d.expect(d.run(l, 20*time.Millisecond), Change{2, 1, ReasonIdle})
			// and stays there: neither their CPU nor their waits raise it
			d.expect(d.run(l, time.Minute))
		})
	}
}

func TestLaw_AnIdleReplicasProbesAreNotHeavy(t *testing.T) {
	// A scrape of 2 ms and two probes a second: dear requests, but alone.
	d := newDriver(t, 2)
	d.expect(d.run(load{util: 0.01, reqsPerS: 3, waitsPerS: 10}, 1010*time.Millisecond), Change{2, 1, ReasonIdle})
	d.expect(d.run(load{util: 0.01, reqsPerS: 3, waitsPerS: 10}, time.Minute))
}

func TestLaw_HeavyRequestsKeepTwoProcessors(t *testing.T) {
	for name, l := range map[string]load{"creates": creates, "searches": fewSearches} {
		t.Run(name, func(t *testing.T) {
			// Light enough for one processor, but each request would hold it.
			d := newDriver(t, 2)
			d.expect(d.run(l, time.Minute))
			// Arriving at one processor (after a quiet spell), they are
			// raised within the heavy window.
			d.run(idle, 2*time.Second)
			c, took := d.until(l, time.Second)
			if c != (Change{1, 2, ReasonHeavy}) || took > heavyWindow+d.step {
				t.Fatalf("heavy requests at one processor: %v after %v; want raised within %v", c, took, heavyWindow)
			}
		})
	}
}

func TestLaw_ABurstRaisesAtOnce(t *testing.T) {
	d := newDriver(t, 2)
	d.run(idle, 2*time.Second)
	if d.law.Level() != 1 {
		t.Fatalf("idle: level %d", d.law.Level())
	}
	// 20 ms at 0.98 of the one processor: raised on the second sample.
	d.expect(d.run(saturating, 20*time.Millisecond), Change{1, 2, ReasonCPU})
	// The load goes on: no lowering while it fills half of the two.
	d.expect(d.run(saturating, 10*time.Second))
	// It ends: lowered again a second later.
	d.expect(d.run(idle, 1010*time.Millisecond), Change{2, 1, ReasonIdle})
}

func TestLaw_ASustainedLoadRaises(t *testing.T) {
	d := newDriver(t, 2)
	d.run(idle, 2*time.Second)
	busy := load{util: 0.75, waitsPerS: 2000}
	d.expect(d.run(busy, 90*time.Millisecond))
	d.expect(d.run(busy, 20*time.Millisecond), Change{1, 2, ReasonCPU})
}

func TestLaw_WaitingBehindWorkRaisesAndHolds(t *testing.T) {
	d := newDriver(t, 2)
	d.run(idle, 2*time.Second)
	// Each time the work queues at one processor they are raised within
	// the latency window. The hold that follows is 10 s; each relapse (queueing
	// again right after the lowering) doubles it: 20, 40, then 60 s at most.
	for _, hold := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
		c, took := d.until(queueing, time.Second)
		if c != (Change{1, 2, ReasonLatency}) || took > 300*time.Millisecond {
			t.Fatalf("queueing at one processor: %v after %v; want a raise for latency within 300 ms", c, took)
		}
		c, took = d.until(queueing, 2*time.Minute)
		if c != (Change{2, 1, ReasonIdle}) || took < hold || took > hold+20*time.Millisecond {
			t.Fatalf("after the raise: %v after %v; want lowered once the %v hold is over", c, took, hold)
		}
	}
	// Queueing that comes back after a quiet spell: the hold starts again at 10 s.
	d.run(idle, 10*time.Second)
	d.until(queueing, time.Second)
	if c, took := d.until(queueing, 2*time.Minute); took < 10*time.Second || took > 10*time.Second+20*time.Millisecond {
		t.Fatalf("after a quiet spell: %v after %v; want lowered after a 10 s hold", c, took)
	}
}

func TestLaw_AStrayWaitIsNotQueueing(t *testing.T) {
	d := newDriver(t, 2)
	d.run(idle, 2*time.Second)
	// One slow wait among the few of an idle process.
	d.s.Wall += d.step
	d.s.Waits += 3
	d.s.Slow++
	if lvl, why := d.law.Step(d.s); lvl != 1 || why != "" {
		t.Fatalf("a stray wait: level %d %q; want 1 unchanged", lvl, why)
	}
	d.expect(d.run(idle, time.Second))
}

func TestLaw_LowersToTheProcessorsTheLoadFillsToHalf(t *testing.T) {
	d := newDriver(t, 8)
	// 1.4 cores: 3 processors at under half each.
	d.expect(d.run(load{util: 1.4, waitsPerS: 3000}, 1010*time.Millisecond), Change{8, 3, ReasonIdle})
	// Neither raised nor lowered while it stays.
	d.expect(d.run(load{util: 1.4, waitsPerS: 3000}, 10*time.Second))
	// 2.2 cores fill the 3 to 0.73 for 100 ms: back to all 8.
	d.expect(d.run(load{util: 2.2, waitsPerS: 3000}, 110*time.Millisecond), Change{3, 8, ReasonCPU})
}

func TestLaw_RaiseAndCeiling(t *testing.T) {
	d := newDriver(t, 4)
	d.run(idle, 2*time.Second)
	if d.law.Level() != 1 {
		t.Fatalf("idle: level %d", d.law.Level())
	}
	d.law.Raise()
	if d.law.Level() != 4 {
		t.Fatalf("after Raise: level %d; want 4", d.law.Level())
	}
	// A smaller ceiling (the cgroup's limit went down) brings the level with it.
	d.law.SetMax(2)
	if d.law.Level() != 2 || d.law.Max() != 2 {
		t.Fatalf("after SetMax(2): level %d max %d", d.law.Level(), d.law.Max())
	}
	d.expect(d.run(idle, 1010*time.Millisecond), Change{2, 1, ReasonIdle})
	if _, err := NewLaw(0); err == nil {
		t.Fatal("NewLaw(0) accepted")
	}
}

func TestLaw_ASampleThatDoesNotMoveOnIsIgnored(t *testing.T) {
	d := newDriver(t, 2)
	before := d.s
	before.CPU += time.Hour // would be a burst if it counted
	if lvl, why := d.law.Step(before); lvl != 2 || why != "" {
		t.Fatalf("same wall time: level %d %q", lvl, why)
	}
	d.expect(d.run(idle, 1010*time.Millisecond), Change{2, 1, ReasonIdle})
}
