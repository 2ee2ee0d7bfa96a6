package httpx

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the Prometheus metrics of the HTTP layer, on their own registry.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series holds each label set's counter and histogram once looked up:
	// WithLabelValues validates and hashes four strings on every request.
	// It grows as the metrics themselves do (one entry per series).
	series sync.Map // seriesKey -> *series
}

type seriesKey struct {
	module, method, route string
	status                int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics registers the HTTP metrics and the Go and process collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agritrade_http_requests_total", Help: "HTTP requests by module, method, route template and status.",
		}, []string{"module", "method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agritrade_http_request_duration_seconds", Help: "HTTP request latency by module, method and route template.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"module", "method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) observe(module, method, route string, status int, d time.Duration) {
	method = methodLabel(method)
	k := seriesKey{module, method, route, status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(module, method, route, strconv.Itoa(status)),
			duration: m.duration.WithLabelValues(module, method, route),
		})
	}
	s := v.(*series)
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() gin.HandlerFunc {
	h := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}

// methodLabel bounds the method label: the method is the client's to choose,
// and each value would be a series of its own.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}
