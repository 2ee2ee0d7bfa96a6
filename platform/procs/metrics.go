package procs

import "github.com/prometheus/client_golang/prometheus"

// changesTotal counts the governor's changes of GOMAXPROCS; the level itself
// is the Go collector's go_sched_gomaxprocs_threads.
var changesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "agritrade_gomaxprocs_changes_total",
	Help: "Changes of GOMAXPROCS by the governor (runtime.adaptive_procs), by reason: cpu, latency, heavy and parallel raise it, idle lowers it.",
}, []string{"reason"})

// Collectors answers the governor's metrics for the server's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{changesTotal} }
