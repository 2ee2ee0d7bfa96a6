// Package cache is the shared key/value cache of every module: an in-process
// memory backend (the default, bounded in entries and bytes, with expiry) and a
// Redis backend (keys namespaced by a prefix) behind one interface.
//
// With the memory backend every replica has a cache of its own, so Open wraps it
// in Replicated: deletions, prefix deletions and flushes are also broadcast on
// the bus and applied by every other replica. Redis is shared by all replicas,
// so a deletion there is already seen by all of them.
package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/agritrade/api/platform/bus"
	"github.com/agritrade/api/platform/config"
	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
)

// Cache is the interface every backend implements. Values are opaque bytes;
// a value returned by Get must be treated as read-only (the memory backend
// hands out its stored slice to avoid a copy per hit).
type Cache interface {
	// Get returns the value of key; ok is false when it is absent or expired.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key for ttl; ttl <= 0 means the cache's default TTL.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Delete removes exact keys and returns how many existed.
	Delete(ctx context.Context, keys ...string) (int, error)
	// DeletePrefix removes every key starting with prefix and returns how many went.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	// Flush removes every entry of this cache (only its own namespace in Redis).
	Flush(ctx context.Context) (int, error)
}

// Backend names accepted by cache.backend.
const (
	BackendMemory = "memory"
	BackendRedis  = "redis"
)

// Defaults used when the configuration leaves a bound at zero.
const (
	DefaultTTL        = 10 * time.Minute
	DefaultMaxEntries = 10000
	DefaultMaxBytes   = 64 << 20
	DefaultPrefix     = "agritrade:cache:"
)

// Open builds the configured backend. client is required for the redis
// backend; b and log are used for the cross-replica broadcast of the memory
// backend and may be nil in tools.
func Open(cfg config.Cache, client *redis.Client, b bus.Bus, log logrus.FieldLogger) (Cache, error) {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	switch cfg.Backend {
	case "", BackendMemory:
		m := NewMemory(MemoryOptions{TTL: ttl, MaxEntries: cfg.MaxEntries, MaxBytes: cfg.MaxBytes})
		if b == nil {
			return m, nil
		}
		return NewReplicated(m, b, log), nil
	case BackendRedis:
		if client == nil {
			return nil, fmt.Errorf("cache.backend redis needs redis.url")
		}
		prefix := cfg.Prefix
		if prefix == "" {
			prefix = DefaultPrefix
		}
		return NewRedis(client, prefix, ttl), nil
	default:
		return nil, fmt.Errorf("cache.backend %q: want memory or redis", cfg.Backend)
	}
}
