package tabular

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Import metrics, labelled by importer: a name set in code at each import
// route ("loads", "varieties"), a bounded set.
var (
	importRowsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_import_rows_total",
		Help: "Rows of imported files by importer and outcome (success, validation, error).",
	}, []string{"importer", "status"})
	importFailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_import_failures_total",
		Help: "Imports that ended with an error instead of a result (bad file, dependency down), by importer.",
	}, []string{"importer"})
	importDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agritrade_import_duration_seconds",
		Help:    "Time one import took, from the first row to the result, by importer.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"importer"})
	importsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agritrade_imports_in_flight",
		Help: "Imports holding a slot of this replica's gate (imports.max_in_flight) right now.",
	})
	importsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agritrade_imports_refused_total",
		Help: "Imports refused with 429 because imports.max_in_flight were already running.",
	})
)

// Collectors answers the import metrics for the server's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{importRowsTotal, importFailuresTotal, importDuration, importsInFlight, importsRefused}
}

// Track starts timing an import; call the answer with its outcome:
//
//	done := tabular.Track("loads")
//	res, err := svc.Import(...)
//	done(res, err)
func Track(importer string) func(*Result, error) {
	start := time.Now()
	return func(r *Result, err error) {
		importDuration.WithLabelValues(importer).Observe(time.Since(start).Seconds())
		if err != nil || r == nil {
			importFailuresTotal.WithLabelValues(importer).Inc()
			return
		}
		importRowsTotal.WithLabelValues(importer, StatusSuccess).Add(float64(r.Success))
		importRowsTotal.WithLabelValues(importer, StatusValidation).Add(float64(r.Validation))
		importRowsTotal.WithLabelValues(importer, StatusError).Add(float64(r.Errors))
	}
}
