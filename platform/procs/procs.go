// Package procs lets GOMAXPROCS follow what the process needs: one processor
// while the load is light, the runtime's default as soon as it is not.
//
// Why: below saturation, Go's scheduler spends much of a cheap request's CPU
// on idle processors. A goroutine made ready while a processor is idle wakes
// another thread to look for work (a futex wake, a context switch, a spin and
// a futex sleep, usually for nothing), and sysmon polls every 20 µs while the
// process flips between busy and idle. Measured on the settings document
// (workload G of ../shared/bench, 2 cores, ~8,000 requests a second, the
// server at ~0.45 of a core), per request: 1.09 context switches, 0.53 futex
// calls and 0.45 nanosleeps with two processors against 0.57, 0.16 and 0.26
// with one, and about a quarter less CPU. A single processor serves such
// loads with room to spare; the second is worth its cost once there is work
// for it.
//
// The governor samples the process: its CPU time (getrusage: the kernel's
// count, system calls included) and the runtime's scheduling latencies
// (/sched/latencies:seconds: how long ready goroutines waited for a
// processor). It raises GOMAXPROCS to the runtime's default at once
//   - when its processors were 90% busy over the last 20 ms, or 70% over the
//     last 100 ms;
//   - when goroutines waited 2 ms or more for a processor (5% of the
//     runtime's sampled waits over the last 250 ms, two at least): work
//     queued behind work although a core was free, as when searches of a few
//     ms arrive together. The level is then kept 10 s at least, doubled (up
//     to a minute) each time the load queues again within 5 s of a lowering;
//   - when a request starts work on several goroutines at once (Raise: an
//     upload's read, write and hash pipeline);
//   - when, on one processor, the requests of the last 100 ms cost more than
//     200 µs of CPU each on average (and the process used a tenth of a core
//     or more): one processor is for cheap requests only. Its saving is a
//     few µs of wake-ups per request, a quarter of a 50 µs request but 2% of
//     a 600 µs create, while the wait behind a request that holds the one
//     processor grows with its length. Nor does it go down to one while the
//     last second's requests were that heavy.
//
// It lowers GOMAXPROCS to the processors the last second's average CPU fills
// to at most half (one at least), once a second at the current level asked
// for fewer. At half busy a single queue makes its requests wait on average
// about as long again as they run; fuller, the wait grows fast (4x at 80%).
// A load just under the line runs at ~0.4 of the one processor (which costs
// less per request than two), well clear of the raise at 0.7. Raising at once
// and lowering slowly keeps the cost of a wrong guess small: a burst's first
// 20 ms (plus the runtime's 10 ms preemption) on one processor.
//
// Sampling costs no wake-ups of its own under load: the server calls Poke
// as each request starts, which samples when 10 ms have passed since the
// last sample. A timer samples only when nothing else did for 250 ms (1 s at
// one processor), so that an idle process is still lowered: on the 2-core
// VMs this was measured on, a wake-up costs 130 to 250 µs of CPU, and a
// 10 ms ticker alone cost 1.3% of a core.
//
// The runtime default (CPUs, affinity and the cgroup's CPU limit, kept up to
// date by the runtime) stays the ceiling: a raise restores it with
// runtime.SetDefaultGOMAXPROCS, and so does the end of Run. An operator who
// sets GOMAXPROCS has chosen, and the serve command then runs no governor.
package procs

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// MinInterval is the least time between two samples.
	MinInterval = 10 * time.Millisecond
	// idlePeriod is how long the governor waits for a sample before its
	// timer takes one; idlePeriodLow at one processor, where the timer has
	// nothing to lower and only a process busy without requests (which no
	// request then waits for) would be raised by it.
	idlePeriod    = 250 * time.Millisecond
	idlePeriodLow = time.Second
)

// ReasonParallel is the reason of a raise asked for with Raise.
const ReasonParallel Reason = "parallel"

// Change is one change of the level, for logs.
type Change struct {
	From, To int
	Reason   Reason
}

// ErrRunning is returned by Run when another governor runs in the process.
var ErrRunning = errors.New("procs: a governor already runs in this process")

// GOMAXPROCS is the process's, so there is one governor at most: claimed
// while a Run runs, active once it samples (what Poke and Raise reach).
var (
	claimed atomic.Bool
	active  atomic.Pointer[governor]
)

type governor struct {
	start    time.Time     // the origin of Sample.Wall (monotonic)
	next     atomic.Int64  // Wall (ns) before which Poke does not sample
	requests atomic.Uint64 // Poke's calls: the requests started
	mu       sync.Mutex    // guards what follows
	law      *Law
	r        *reader
	timer    *time.Timer
	onChange func(Change)
}

// Run governs GOMAXPROCS until ctx ends, then restores the runtime's default.
// onChange, when set, is called after each change (while the governor holds
// its lock: it must not call back into this package). It returns at once,
// with nil, where there is nothing to govern: a single processor, or no CPU
// clock on this system.
func Run(ctx context.Context, onChange func(Change)) error {
	if !claimed.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer claimed.Store(false)
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		return nil
	}
	r, err := newReader()
	if err != nil {
		return nil //nolint:nilerr // no CPU clock here: the runtime keeps its default, as without a governor
	}
	law, err := NewLaw(max)
	if err != nil {
		return err
	}
	g := &governor{start: time.Now(), law: law, r: r, onChange: onChange}
	g.mu.Lock() // the timer's first sample waits for the timer to be set
	active.Store(g)
	g.timer = time.AfterFunc(idlePeriod, g.tick)
	g.sampleLocked(time.Since(g.start))
	g.mu.Unlock()

	<-ctx.Done()
	g.mu.Lock()
	active.Store(nil)
	g.timer.Stop()
	runtime.SetDefaultGOMAXPROCS()
	g.mu.Unlock()
	return nil
}

// Poke counts a request and samples the process if a sample is due. The
// server calls it as each request starts, so that a loaded process is
// sampled by its own requests (an atomic add, a time read and an atomic
// load when no sample is due).
func Poke() {
	g := active.Load()
	if g == nil {
		return
	}
	g.requests.Add(1)
	now := time.Since(g.start)
	if int64(now) < g.next.Load() || !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	if active.Load() == g { // not stopped meanwhile
		g.sampleLocked(now)
	}
}

// Raise gives the process the runtime's default GOMAXPROCS at once: a
// request calls it as it starts work on several goroutines at once, which
// would otherwise take turns on one processor until the next sample.
func Raise() {
	g := active.Load()
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if active.Load() != g || g.law.Level() >= g.law.Max() {
		return
	}
	from := g.law.Level()
	g.law.Raise()
	g.apply(from, ReasonParallel)
}

// tick is the timer's sample.
func (g *governor) tick() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if active.Load() == g {
		g.sampleLocked(time.Since(g.start))
	}
}

// sampleLocked takes a sample, applies the law's answer and sets the timer
// to sample again if nothing else does within idlePeriod.
func (g *governor) sampleLocked(now time.Duration) {
	g.next.Store(int64(now + MinInterval))
	from := g.law.Level()
	sample := g.r.read(now)
	sample.Requests = g.requests.Load()
	if _, why := g.law.Step(sample); why != "" {
		g.apply(from, why)
	}
	if g.law.Level() == 1 {
		g.timer.Reset(idlePeriodLow)
	} else {
		g.timer.Reset(idlePeriod)
	}
}

// apply sets GOMAXPROCS to the law's level.
func (g *governor) apply(from int, why Reason) {
	to := g.law.Level()
	if to == g.law.Max() {
		// The default, not a number: the runtime keeps following the
		// cgroup's limit, and the ceiling follows the runtime.
		runtime.SetDefaultGOMAXPROCS()
		if def := runtime.GOMAXPROCS(0); def != to {
			g.law.SetMax(def)
			to = def
		}
	} else {
		runtime.GOMAXPROCS(to)
	}
	changesTotal.WithLabelValues(string(why)).Inc()
	if g.onChange != nil {
		g.onChange(Change{From: from, To: to, Reason: why})
	}
}

// reader samples the process.
type reader struct {
	hist []metrics.Sample
	cpu  time.Duration // the last CPU time read
}

func newReader() (*reader, error) {
	cpu, err := processCPU()
	if err != nil {
		return nil, err
	}
	return &reader{hist: []metrics.Sample{{Name: "/sched/latencies:seconds"}}, cpu: cpu}, nil
}

func (r *reader) read(now time.Duration) Sample {
	// The clock answered once; should it fail later, the interval reads as
	// no CPU used (which can only lower the level after a whole second).
	if cpu, err := processCPU(); err == nil {
		r.cpu = cpu
	}
	s := Sample{Wall: now, CPU: r.cpu}
	metrics.Read(r.hist) // reuses the histogram's slices after the first read
	if r.hist[0].Value.Kind() != metrics.KindFloat64Histogram {
		return s
	}
	h := r.hist[0].Value.Float64Histogram()
	limit := slowWait.Seconds()
	for i, c := range h.Counts {
		s.Waits += c
		if h.Buckets[i] >= limit {
			s.Slow += c
		}
	}
	return s
}
