package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcraScript runs GCRA atomically in Redis on the server's clock, so that
// replicas with skewed clocks share one consistent bucket per key. Times are
// microseconds. It answers {1, 0} when allowed, {0, wait} when not.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nxt = tat + interval
local allow_at = nxt - tolerance
if allow_at > now then
  return {0, allow_at - now}
end
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
return {1, 0}
`)

// Redis keeps the buckets in Redis, shared by every replica.
type Redis struct {
	client *redis.Client
	prefix string
	rate   Rate
}

// NewRedis returns a limiter over a Redis client; prefix namespaces its keys.
func NewRedis(client *redis.Client, prefix string, rate Rate) *Redis {
	return &Redis{client: client, prefix: prefix, rate: rate}
}

// Allow implements Limiter.
func (r *Redis) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	if r.rate.PerMinute <= 0 {
		return true, 0, nil
	}
	res, err := gcraScript.Run(ctx, r.client, []string{r.prefix + key},
		r.rate.interval().Microseconds(), r.rate.tolerance().Microseconds()).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("rate limit in redis: %w", err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("rate limit in redis: unexpected answer %v", res)
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Microsecond, nil
}
