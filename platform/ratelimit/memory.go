package ratelimit

import (
	"context"
	"sync"
	"time"
)

// sweepEvery is how many calls pass between sweeps of idle keys, so that
// memory stays proportional to the clients of the last few seconds.
const sweepEvery = 4096

// Memory keeps the buckets in process: right for one replica, or as a
// per-replica limit when several run.
type Memory struct {
	rate  Rate
	now   func() time.Time
	mu    sync.Mutex
	tat   map[string]time.Time
	calls int
}

// NewMemory returns an in-process limiter.
func NewMemory(rate Rate) *Memory {
	return &Memory{rate: rate, now: time.Now, tat: map[string]time.Time{}}
}

// Allow implements Limiter with GCRA.
func (m *Memory) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	if m.rate.PerMinute <= 0 {
		return true, 0, nil
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.calls%sweepEvery == 0 {
		m.sweep(now)
	}
	tat, ok := m.tat[key]
	if !ok || tat.Before(now) {
		tat = now
	}
	next := tat.Add(m.rate.interval())
	if allowAt := next.Add(-m.rate.tolerance()); allowAt.After(now) {
		return false, allowAt.Sub(now), nil
	}
	m.tat[key] = next
	return true, 0, nil
}

// sweep drops keys whose bucket is full again: they hold nothing a new entry
// would not.
func (m *Memory) sweep(now time.Time) {
	for k, t := range m.tat {
		if !t.After(now) {
			delete(m.tat, k)
		}
	}
}

// Len is the number of keys held (for tests and metrics).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tat)
}
