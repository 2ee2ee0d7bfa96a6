package cache

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"time"
)

// MemoryOptions bound the in-process cache.
type MemoryOptions struct {
	// TTL is the lifetime of entries set with ttl <= 0.
	TTL time.Duration
	// MaxEntries caps the number of entries; the least recently used go first.
	MaxEntries int
	// MaxBytes caps the sum of key and value sizes; the least recently used go first.
	MaxBytes int64
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Memory is a bounded LRU cache with per-entry expiry, safe for concurrent use.
type Memory struct {
	mu    sync.Mutex
	o     MemoryOptions
	ll    *list.List // front = most recently used
	items map[string]*list.Element
	bytes int64
}

type entry struct {
	key     string
	value   []byte
	expires time.Time
}

func (e *entry) size() int64 { return int64(len(e.key) + len(e.value)) }

// NewMemory makes an empty memory cache; zero options take the package defaults.
func NewMemory(o MemoryOptions) *Memory {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Memory{o: o, ll: list.New(), items: map[string]*list.Element{}}
}

// Get returns the stored value (read-only) when present and not expired.
func (m *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[key]
	if !ok {
		memoryMisses.Inc()
		return nil, false, nil
	}
	e := el.Value.(*entry)
	if !m.o.Now().Before(e.expires) {
		m.remove(el)
		evictedExpired.Inc()
		memoryMisses.Inc()
		return nil, false, nil
	}
	m.ll.MoveToFront(el)
	memoryHits.Inc()
	return e.value, true, nil
}

// Set stores a copy of value. A value larger than MaxBytes is not stored.
func (m *Memory) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = m.o.TTL
	}
	// A private copy with cap == len: a caller appending to what Get returns
	// then reallocates instead of writing into the cache.
	v := make([]byte, len(value))
	copy(v, value)
	e := &entry{key: key, value: v[:len(v):len(v)], expires: m.o.Now().Add(ttl)}
	if e.size() > m.o.MaxBytes {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[key]; ok {
		m.remove(el)
	}
	m.items[key] = m.ll.PushFront(e)
	m.bytes += e.size()
	for m.ll.Len() > m.o.MaxEntries || m.bytes > m.o.MaxBytes {
		m.remove(m.ll.Back())
		evictedCapacity.Inc()
	}
	return nil
}

// Delete removes keys and counts those that were live.
func (m *Memory) Delete(_ context.Context, keys ...string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Now()
	n := 0
	for _, k := range keys {
		if el, ok := m.items[k]; ok {
			if now.Before(el.Value.(*entry).expires) {
				n++
			}
			m.remove(el)
		}
	}
	return n, nil
}

// DeletePrefix removes every key starting with prefix.
func (m *Memory) DeletePrefix(_ context.Context, prefix string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.o.Now()
	n := 0
	for k, el := range m.items {
		if strings.HasPrefix(k, prefix) {
			if now.Before(el.Value.(*entry).expires) {
				n++
			}
			m.remove(el)
		}
	}
	return n, nil
}

// Flush empties the cache.
func (m *Memory) Flush(ctx context.Context) (int, error) { return m.DeletePrefix(ctx, "") }

// Len returns the number of stored entries, expired ones included (tests, metrics).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ll.Len()
}

func (m *Memory) remove(el *list.Element) {
	e := el.Value.(*entry)
	m.ll.Remove(el)
	delete(m.items, e.key)
	m.bytes -= e.size()
}
