package cache

import "github.com/prometheus/client_golang/prometheus"

// The cache's metrics, process-wide, labelled by backend (memory, redis).
var (
	hitsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_cache_hits_total", Help: "Cache reads that found a live entry, by backend.",
	}, []string{"backend"})
	missesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_cache_misses_total", Help: "Cache reads that found nothing (absent or expired), by backend.",
	}, []string{"backend"})
	evictionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_cache_evictions_total", Help: "Entries the memory cache dropped by itself, by reason (capacity, expired).",
	}, []string{"reason"})
	clearsReceivedTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agritrade_cache_clears_received_total", Help: "Cache invalidations received from other replicas over the bus and applied here.",
	})

	// Resolved once: a cache read must not look labels up.
	memoryHits, memoryMisses = hitsTotal.WithLabelValues(BackendMemory), missesTotal.WithLabelValues(BackendMemory)
	redisHits, redisMisses   = hitsTotal.WithLabelValues(BackendRedis), missesTotal.WithLabelValues(BackendRedis)
	evictedCapacity          = evictionsTotal.WithLabelValues("capacity")
	evictedExpired           = evictionsTotal.WithLabelValues("expired")
)

// Collectors answers the cache's metrics for the server's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{hitsTotal, missesTotal, evictionsTotal, clearsReceivedTotal}
}
