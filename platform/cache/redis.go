package cache

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// scanBatch is how many keys one SCAN step asks for and one DEL removes.
const scanBatch = 500

// Redis is the cache shared by every replica. Every key lives under prefix, so
// several deployments (or test runs) can share a server, and Flush never
// touches keys that are not the cache's.
type Redis struct {
	client *redis.Client
	prefix string
	ttl    time.Duration
}

// NewRedis makes a cache over client with keys namespaced by prefix.
func NewRedis(client *redis.Client, prefix string, ttl time.Duration) *Redis {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Redis{client: client, prefix: prefix, ttl: ttl}
}

// Get reads a key.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	b, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		redisMisses.Inc()
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	redisHits.Inc()
	return b, true, nil
}

// Set writes a key with its expiry.
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = r.ttl
	}
	return r.client.Set(ctx, r.prefix+key, value, ttl).Err()
}

// Delete removes exact keys; Redis counts those that existed.
func (r *Redis) Delete(ctx context.Context, keys ...string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = r.prefix + k
	}
	total := 0
	for start := 0; start < len(full); start += scanBatch {
		end := min(start+scanBatch, len(full))
		n, err := r.client.Del(ctx, full[start:end]...).Result()
		total += int(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// DeletePrefix walks the namespace with SCAN (never KEYS, which blocks the
// server) and deletes the matches batch by batch.
func (r *Redis) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	pattern := escapeGlob(r.prefix+prefix) + "*"
	total := 0
	var cursor uint64
	for {
		keys, next, err := r.client.Scan(ctx, cursor, pattern, scanBatch).Result()
		if err != nil {
			return total, err
		}
		if len(keys) > 0 {
			n, err := r.client.Del(ctx, keys...).Result()
			total += int(n)
			if err != nil {
				return total, err
			}
		}
		if next == 0 {
			return total, nil
		}
		cursor = next
	}
}

// Flush deletes every key of the cache's namespace, nothing else.
func (r *Redis) Flush(ctx context.Context) (int, error) { return r.DeletePrefix(ctx, "") }

// escapeGlob quotes the characters SCAN MATCH treats as pattern syntax, so that
// a prefix matches literally.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
