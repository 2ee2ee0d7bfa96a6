package ratelimit

import "github.com/prometheus/client_golang/prometheus"

// decisionsTotal counts the limiter's answers by scope (the route groups'
// names set in code, a bounded set) and decision (allowed, limited, or
// bypassed when the backend failed and the request went through).
var decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "agritrade_ratelimit_requests_total",
	Help: "Rate-limited routes' requests by scope and decision (allowed, limited, bypassed: limiter unavailable).",
}, []string{"scope", "decision"})

// Collectors answers the rate limiter's metrics for the server's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{decisionsTotal} }
