package app

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// readiness exports what /readyz last answered and how often the answer
// changed: a replica whose readiness flaps drops in and out of the load
// balancer, which the alert on agritrade_readiness_changes_total catches.
type readiness struct {
	mu      sync.Mutex
	known   bool
	ready   bool
	gauge   prometheus.Gauge
	changes prometheus.Counter
}

func newReadiness(reg prometheus.Registerer) *readiness {
	r := &readiness{
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agritrade_ready", Help: "1 when the last /readyz check passed, 0 when a dependency was down.",
		}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agritrade_readiness_changes_total", Help: "Times the /readyz answer changed between ready and not ready.",
		}),
	}
	for _, c := range []prometheus.Collector{r.gauge, r.changes} {
		if err := reg.Register(c); err != nil {
			// A second server over one platform (tests) reuses the first's series.
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if c == r.gauge {
					r.gauge = are.ExistingCollector.(prometheus.Gauge)
				} else {
					r.changes = are.ExistingCollector.(prometheus.Counter)
				}
				continue
			}
			panic(err)
		}
	}
	return r
}

func (r *readiness) observe(ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.known && r.ready != ok {
		r.changes.Inc()
	}
	r.known, r.ready = true, ok
	if ok {
		r.gauge.Set(1)
	} else {
		r.gauge.Set(0)
	}
}
