package procs

import (
	"fmt"
	"math"
	"time"
)

// The control law's constants (see the package comment).
const (
	// burstShare and burstWindow: the newest samples spanning burstWindow
	// used this share of the current processors: raise.
	burstShare  = 0.9
	burstWindow = 20 * time.Millisecond
	// raiseShare and raiseWindow: the same, sustained.
	raiseShare  = 0.7
	raiseWindow = 100 * time.Millisecond
	// lowerShare and lowerWindow: the level kept is the one the average CPU
	// of the last lowerWindow fills to at most lowerShare (and a level is
	// kept lowerWindow at least). A load just below the line runs at about
	// 0.4 of the single processor (one processor costs less per request
	// than two), well clear of raiseShare.
	lowerShare  = 0.5
	lowerWindow = time.Second
	// cheapRequest: one processor is only for requests that cost at most
	// this much CPU on average (over the last lowerWindow to go down to one,
	// the last heavyWindow to stay), once they use heavyFloor of a core or
	// more (below it they rarely meet: an idle replica's probes and scrapes).
	// The wake-ups one processor saves are a few µs per request, a quarter
	// of a 50 µs request but 2% of a 600 µs one, while the wait behind a
	// request that holds the one processor grows with its length (and with
	// any work it sets off: a WAL checkpoint, a collection). Measured: the
	// settings document ~50 µs, a listing create 500 to 700, a search 2 to
	// 4 ms.
	cheapRequest = 200 * time.Microsecond
	heavyWindow  = 100 * time.Millisecond
	heavyFloor   = 0.1
	// slowWait is the scheduling latency that counts as waiting behind work;
	// a raise for latency needs, over the last latencyWindow, at least
	// latencyMin slow waits and latencyShare of the (sampled: one in eight)
	// waits. Cheap requests at 0.4 of a processor (the settings document,
	// listing creates) wait 2 ms or more in under 0.2% of the samples, even
	// through a garbage collection; searches of 3 ms arriving 40 times a
	// second, in 15 to 50% (2 to 6 of the 12 to 15 sampled in 250 ms). One
	// stray wait in an idle process is not enough.
	slowWait      = 2 * time.Millisecond
	latencyWindow = 250 * time.Millisecond
	latencyMin    = 2
	latencyShare  = 0.05
	// holdMin is how long after a raise for latency no lowering happens. A
	// raise for latency within relapse of the last lowering (the load queued
	// again as soon as it had one processor) doubles the hold, up to
	// holdMax; any other starts again at holdMin. A load that queues at the
	// lower level now and then (searches arriving together) so stops paying
	// for a queue every few seconds and keeps its processors, while one that
	// comes back after a quiet spell (the first requests of a burst waiting
	// while the level is raised) costs only holdMin. A raise for CPU needs no
	// hold: the load that caused it would fill more than one processor to
	// 0.7, and the level is lowered only once it fills them to less than half.
	holdMin = 10 * time.Second
	holdMax = time.Minute
	relapse = 5 * time.Second
)

// Reason is why the level changed.
type Reason string

// The reasons of a change.
const (
	ReasonCPU     Reason = "cpu"     // raised: the processors were nearly all busy
	ReasonLatency Reason = "latency" // raised: goroutines waited for a processor
	ReasonHeavy   Reason = "heavy"   // raised: requests too long to wait behind one another on one processor
	ReasonIdle    Reason = "idle"    // lowered: the load fits in fewer processors
)

// Sample is what the governor reads of the process; every field but Wall is
// cumulative since the process started.
type Sample struct {
	Wall  time.Duration // monotonic time of the sample (any fixed origin)
	CPU   time.Duration // user and system CPU time of the process
	Slow  uint64        // sampled scheduling waits of slowWait or more
	Waits uint64        // sampled scheduling waits
	// Requests counts the requests started.
	Requests uint64
}

// interval is what happened between two samples.
type interval struct {
	dt, cpu           time.Duration
	slow, waits, reqs uint64
}

// Law is the control law: given successive samples it answers the level to
// run at. It holds no reference to the runtime, so that tests drive it with
// made-up samples; it is not safe for concurrent use.
type Law struct {
	max, level int
	prev       Sample
	primed     bool
	// recent holds the intervals since the last change of level, newest
	// last, as far back as the longest window needs.
	recent []interval
	// atLevel is the time since the last change of level.
	atLevel time.Duration
	// holdUntil is when lowering may happen again after a raise for
	// latency, holdFor the length of that hold; lastLower is when the level
	// was last lowered (0: never).
	holdUntil, holdFor, lastLower time.Duration
}

// NewLaw returns the law for at most max processors, starting at max.
func NewLaw(n int) (*Law, error) {
	if n < 1 {
		return nil, fmt.Errorf("procs: max %d must be at least 1", n)
	}
	return &Law{max: n, level: n}, nil
}

// Level is the current level.
func (l *Law) Level() int { return l.level }

// Max is the ceiling.
func (l *Law) Max() int { return l.max }

// SetMax changes the ceiling (the runtime's default moved); a level above it
// comes down to it.
func (l *Law) SetMax(n int) {
	l.max = max(n, 1)
	if l.level > l.max {
		l.moveTo(l.max)
	}
}

// Step takes a sample and answers the level to run at and, when it changed,
// why.
func (l *Law) Step(s Sample) (int, Reason) {
	if !l.primed {
		l.prev, l.primed = s, true
		return l.level, ""
	}
	if s.Wall <= l.prev.Wall {
		return l.level, "" // not after the last: nothing to measure
	}
	iv := interval{dt: s.Wall - l.prev.Wall, cpu: s.CPU - l.prev.CPU, slow: s.Slow - l.prev.Slow, waits: s.Waits - l.prev.Waits, reqs: s.Requests - l.prev.Requests}
	l.prev = s
	l.atLevel += iv.dt
	l.recent = append(l.recent, iv)
	l.trim()
	if l.level < l.max {
		switch {
		case l.busy(burstWindow, burstShare) || l.busy(raiseWindow, raiseShare):
			l.moveTo(l.max)
			return l.level, ReasonCPU
		case l.level == 1 && l.heavy(heavyWindow):
			l.moveTo(l.max)
			return l.level, ReasonHeavy
		case l.waitedBehindWork():
			l.moveTo(l.max)
			l.hold(s.Wall)
			return l.level, ReasonLatency
		}
	}
	if l.level == 1 || s.Wall < l.holdUntil || l.atLevel < lowerWindow {
		return l.level, ""
	}
	cpu, span, _ := l.sum(lowerWindow)
	need := max(int(math.Ceil(float64(cpu)/float64(span)/lowerShare)), 1)
	if need == 1 && l.heavy(lowerWindow) {
		need = 2
	}
	if need >= l.level {
		return l.level, ""
	}
	l.moveTo(need)
	l.lastLower = s.Wall
	return l.level, ReasonIdle
}

// Raise moves to the ceiling at once: work that needs it is starting.
func (l *Law) Raise() {
	if l.level < l.max {
		l.moveTo(l.max)
	}
}

// hold keeps the level from being lowered for holdMin from now, doubled
// (up to holdMax) when the load queued again within relapse of the last
// lowering.
func (l *Law) hold(now time.Duration) {
	if l.holdFor > 0 && l.lastLower > 0 && now-l.lastLower < relapse {
		l.holdFor = min(2*l.holdFor, holdMax)
	} else {
		l.holdFor = holdMin
	}
	l.holdUntil = now + l.holdFor
}

// busy tells whether the newest intervals spanning w (a whole w at the
// level) used share of the processors.
func (l *Law) busy(w time.Duration, share float64) bool {
	if l.atLevel < w {
		return false
	}
	cpu, span, _ := l.sum(w)
	return float64(cpu) >= share*float64(l.level)*float64(span)
}

// heavy tells whether the requests of the newest intervals spanning w cost
// more than cheapRequest of CPU each on average, while the process used
// heavyFloor of a core or more.
func (l *Law) heavy(w time.Duration) bool {
	cpu, span, reqs := l.sum(w)
	return reqs > 0 && float64(cpu) > float64(reqs)*float64(cheapRequest) && float64(cpu) >= heavyFloor*float64(span)
}

// waitedBehindWork tells whether goroutines waited slowWait or more for a
// processor, often enough over the latency window to be more than a stray.
// Only a whole window at the level counts: the change of level itself (a
// stop of the world) makes a few goroutines wait, and a window that starts
// with it would take that for the load's doing.
func (l *Law) waitedBehindWork() bool {
	if l.atLevel < latencyWindow {
		return false
	}
	var slow, waits uint64
	var span time.Duration
	for i := len(l.recent) - 1; i >= 0 && span < latencyWindow; i-- {
		slow += l.recent[i].slow
		waits += l.recent[i].waits
		span += l.recent[i].dt
	}
	return slow >= latencyMin && float64(slow) >= latencyShare*float64(waits)
}

// sum answers the CPU used over the newest intervals that span at least w
// (all of them if they span less), their span and the requests started.
func (l *Law) sum(w time.Duration) (cpu, span time.Duration, reqs uint64) {
	for i := len(l.recent) - 1; i >= 0 && span < w; i-- {
		cpu += l.recent[i].cpu
		span += l.recent[i].dt
		reqs += l.recent[i].reqs
	}
	return cpu, span, reqs
}

// trim drops the intervals that no window reaches any more.
func (l *Law) trim() {
	var span time.Duration
	for i := len(l.recent) - 1; i >= 0; i-- {
		span += l.recent[i].dt
		if span >= lowerWindow {
			if i > 0 {
				l.recent = append(l.recent[:0], l.recent[i:]...)
			}
			return
		}
	}
}

// moveTo sets the level and forgets what was measured at the old one.
func (l *Law) moveTo(level int) {
	l.level = level
	l.recent = l.recent[:0]
	l.atLevel = 0
}
