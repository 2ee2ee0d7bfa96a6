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

// Collectors answers the file store's metrics for the server's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{bytesTotal} }

// countingReadCloser counts the bytes a download actually reads.
type countingReadCloser struct {
	io.ReadCloser
}

func (c countingReadCloser) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	bytesOut.Add(float64(n))
	return n, err
}
