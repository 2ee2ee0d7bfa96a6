package tabular

import (
	"strconv"

	"github.com/agritrade/api/platform/apierr"
)

// Gate limits the imports this process runs at once. Each import holds a
// bounded amount of memory (see Options) and a spooled file; the gate makes
// the sum bounded too. A request over the limit is refused at once with 429
// and Retry-After rather than queued: a queue would hold its body and its
// connection for as long as it waits.
type Gate struct {
	slots      chan struct{}
	retryAfter int
}

// GateRetryAfter is the Retry-After, in seconds, of an import refused by a Gate.
const GateRetryAfter = 5

// NewGate returns a gate of n slots; nil (no limit) when n <= 0.
func NewGate(n int) *Gate {
	if n <= 0 {
		return nil
	}
	return &Gate{slots: make(chan struct{}, n), retryAfter: GateRetryAfter}
}

// Enter takes a slot, or answers 429 rate_limited when all are taken. The
// returned release gives the slot back (call it once). A nil gate admits all.
func (g *Gate) Enter() (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
		importsInFlight.Inc()
		done := false
		return func() {
			if !done {
				done = true
				<-g.slots
				importsInFlight.Dec()
			}
		}, nil
	default:
		importsRefused.Inc()
		return nil, &apierr.Error{
			Code:       apierr.CodeRateLimited,
			Message:    "too many imports are running on this server (limit " + strconv.Itoa(cap(g.slots)) + "): retry shortly",
			RetryAfter: g.retryAfter,
		}
	}
}

// Limit is the number of slots (0 for a nil gate).
func (g *Gate) Limit() int {
	if g == nil {
		return 0
	}
	return cap(g.slots)
}
