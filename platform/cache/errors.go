package cache

import (
	"errors"

	"github.com/agritrade/api/platform/fault"
	"github.com/redis/go-redis/v9"
)

// IsUnavailable tells whether err from the Redis backend means Redis is down,
// restarting, failing over or overloaded: a transport failure, a closed or
// exhausted client pool, or the server's LOADING, READONLY (a replica during
// failover), MASTERDOWN, CLUSTERDOWN, TRYAGAIN, max-clients and OOM answers.
// The rate limiter and the bus use the same client and meet the same errors
// (they let requests through and reconnect); this classifier is the one the
// error middleware gets (apierr.Classifier "the cache").
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	return errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) ||
		redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMasterDownError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMaxClientsError(err) || redis.IsOOMError(err) ||
		fault.IsConnectionFailure(err)
}
