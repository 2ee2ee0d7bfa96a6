// Package ratelimit limits how often a client may call the public routes.
//
// Limits are token buckets computed with the generic cell rate algorithm
// (GCRA): a key holds one timestamp, the "theoretical arrival time" of its next
// request, so a bucket costs one map entry (memory backend) or one Redis key
// (Redis backend, shared by every replica) whatever its size. A bucket holds
// Burst requests and refills at PerMinute requests a minute.
package ratelimit

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/agritrade/api/platform/apierr"
	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/httpx"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
)

// Limiter decides whether one more request of a key is allowed now.
type Limiter interface {
	// Allow consumes one request of key's bucket. When the bucket is empty it
	// answers ok=false and how long until a request would be allowed. err is for
	// backend failures only.
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// Rate is the shape of every bucket of a limiter.
type Rate struct {
	// PerMinute is the sustained rate: requests a minute.
	PerMinute int
	// Burst is how many requests may arrive at once on a full bucket.
	Burst int
}

// interval is the time one request "costs": the bucket refills one request
// per interval.
func (r Rate) interval() time.Duration {
	return time.Duration(float64(time.Minute) / float64(r.PerMinute))
}

// tolerance is how far ahead of now a key's arrival time may run: Burst
// requests' worth of intervals.
func (r Rate) tolerance() time.Duration {
	burst := r.Burst
	if burst < 1 {
		burst = 1
	}
	return time.Duration(burst) * r.interval()
}

// unlimited allows everything: the limiter of a disabled configuration.
type unlimited struct{}

func (unlimited) Allow(context.Context, string) (bool, time.Duration, error) { return true, 0, nil }

// Unlimited returns a limiter that allows every request.
func Unlimited() Limiter { return unlimited{} }

// KeySuffix follows the deployment's redis.prefix in every Redis key of the
// limiter that New builds: buckets of deployments sharing a Redis stay apart.
const KeySuffix = "ratelimit:"

// New returns the limiter the configuration asks for: unlimited when
// ratelimit.per_minute is 0 or less, shared through Redis under
// <redis.prefix>ratelimit: when cache.backend is redis (rdb must then be set),
// else in process.
func New(cfg *config.Config, rdb *redis.Client) Limiter {
	rate := Rate{PerMinute: cfg.RateLimit.PerMinute, Burst: cfg.RateLimit.Burst}
	switch {
	case rate.PerMinute <= 0:
		return Unlimited()
	case cfg.Cache.Backend == "redis" && rdb != nil:
		return NewRedis(rdb, cfg.Redis.Prefix+KeySuffix, rate)
	default:
		return NewMemory(rate)
	}
}

// Middleware limits per client IP under a scope name; 429 rate_limited with
// Retry-After. The scope keeps the buckets of different route groups apart
// ("locations" and "shortlinks" each get their own allowance). A nil limiter
// lets everything through. When the backend fails the request goes through and
// the failure is logged: a broken Redis must not take the API down with it.
func Middleware(l Limiter, scope string) gin.HandlerFunc {
	allowed, limited, bypassed := decisionsTotal.WithLabelValues(scope, "allowed"),
		decisionsTotal.WithLabelValues(scope, "limited"), decisionsTotal.WithLabelValues(scope, "bypassed")
	return func(c *gin.Context) {
		if l == nil {
			c.Next()
			return
		}
		ok, wait, err := l.Allow(c.Request.Context(), scope+":"+c.ClientIP())
		if err != nil {
			httpx.Logger(c).WithError(err).WithField("scope", scope).Warn("rate limiter unavailable; request allowed")
			bypassed.Inc()
			c.Next()
			return
		}
		if !ok {
			limited.Inc()
			secs := RetryAfterSeconds(wait)
			apierr.Render(c, &apierr.Error{
				Code:       apierr.CodeRateLimited,
				Message:    "too many requests; retry after " + strconv.Itoa(secs) + " s",
				RetryAfter: secs,
			})
			return
		}
		allowed.Inc()
		c.Next()
	}
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1, as the
// Retry-After header counts them.
func RetryAfterSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}
