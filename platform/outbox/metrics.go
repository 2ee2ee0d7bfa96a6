package outbox

import (
	"context"
	"time"

	"github.com/agritrade/api/platform/telemetry"
	"github.com/prometheus/client_golang/prometheus"
)

// The delivery metrics are process-wide: one process runs one dispatcher, and
// the labels are the channel names (log, webhook, smtp), a bounded set.
var (
	deliveriesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_outbox_deliveries_total",
		Help: "Outbox delivery attempts by channel and outcome (delivered, failed).",
	}, []string{"channel", "outcome"})
	deadTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_outbox_dead_events_total",
		Help: "Outbox events given up after the last attempt, by the channel that still failed (claim: no outcome was ever stored).",
	}, []string{"channel"})
	deliveryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agritrade_outbox_delivery_duration_seconds",
		Help:    "Time one channel took to take (or refuse) one outbox event.",
		Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"channel"})
)

// Collectors answers the dispatcher's metrics: delivery counters and latency,
// and the backlog (pending events, age of the oldest) read from the table at
// scrape time, so every replica reports the shared backlog.
func (d *Dispatcher) Collectors() []prometheus.Collector {
	return []prometheus.Collector{deliveriesTotal, deadTotal, deliveryDuration, &backlogCollector{d: d}}
}

var (
	pendingDesc = prometheus.NewDesc("agritrade_outbox_pending_events",
		"Outbox events waiting for delivery (all replicas).", nil, nil)
	oldestDesc = prometheus.NewDesc("agritrade_outbox_oldest_pending_age_seconds",
		"Age of the oldest outbox event still waiting for delivery; 0 when none waits.", nil, nil)
)

// backlogScrapeTimeout bounds the backlog queries: a scrape while the
// database is down answers without these two series instead of hanging.
const backlogScrapeTimeout = 2 * time.Second

type backlogCollector struct{ d *Dispatcher }

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(telemetry.Untraced(context.Background()), backlogScrapeTimeout)
	defer cancel()
	n, oldest, err := backlog(ctx, c.d.db)
	if err != nil {
		// The database is away: the two series are missing from this scrape
		// (the alert on them then sees no data), the rest of /metrics stays.
		c.d.o.Log.WithError(err).Debug("outbox backlog not measured")
		return
	}
	age := 0.0
	if n > 0 {
		age = max(0, c.d.o.Now().Sub(oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age)
}
