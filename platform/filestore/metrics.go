package filestore

import (
	"io"

	"github.com/prometheus/client_golang/prometheus"
)

// bytesTotal counts the file store's traffic: in is the bytes of stored
// uploads, out the bytes read back for downloads.
var (
	bytesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agritrade_filestore_bytes_total",
		Help: "Bytes stored into (in) and read from (out) the file store.",
	}, []string{"direction"})
	bytesIn, bytesOut = bytesTotal.WithLabelValues("in"), bytesTotal.WithLabelValues("out")
)

// The thumbnails this replica made, how long the making took (decode,
// scale, encode) and how long makings waited for a slot (the semaphore of
// thumbs.go): a wait that grows says files.thumb_concurrency is too small
// for the traffic of first requests.
var (
	thumbsMade = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "agritrade_filestore_thumbnails_made_total",
		Help: "Thumbnails made and stored (a request served from a stored thumbnail is not counted).",
	})
	thumbSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agritrade_filestore_thumbnail_seconds",
		Help:    "Time to make one thumbnail: decode, scale, encode.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	thumbWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "agritrade_filestore_thumbnail_wait_seconds",
		Help:    "Time a thumbnail making waited for a free slot (files.thumb_concurrency).",
		Buckets: []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60},
	})
)

// Collectors answers the file store's metrics for the server's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{bytesTotal, thumbsMade, thumbSeconds, thumbWait}
}

// countingReadCloser counts the bytes a download actually reads.
type countingReadCloser struct {
	io.ReadCloser
}

func (c countingReadCloser) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	bytesOut.Add(float64(n))
	return n, err
}
