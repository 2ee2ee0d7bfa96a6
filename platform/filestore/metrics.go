package filestore

import (
	"io"
	"os"

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

// WriteTo sends the download to w. A local file goes through w's ReadFrom
// when w has one: the server's connection then has the kernel copy it from
// the page cache (sendfile) instead of the process reading it in and writing
// it out again. Anything else is copied through a buffer.
func (c countingReadCloser) WriteTo(w io.Writer) (int64, error) {
	if rf, ok := w.(io.ReaderFrom); ok {
		if f := localFile(c.ReadCloser); f != nil {
			n, err := rf.ReadFrom(f)
			bytesOut.Add(float64(n))
			return n, err
		}
	}
	return io.CopyBuffer(writerOnly{w}, readerOnly{c}, make([]byte, downloadBufferSize))
}

// downloadBufferSize is the copy buffer of a download that is not a local
// file handed to the kernel.
const downloadBufferSize = 64 << 10

// readerOnly hides a reader's WriteTo from io.CopyBuffer.
type readerOnly struct{ io.Reader }

// localFile is the file a local store opened for a download (Local.Open):
// the *os.File, or the *io.LimitedReader of a range of it; nil for any other
// body.
func localFile(rc io.ReadCloser) io.Reader {
	switch b := rc.(type) {
	case *os.File:
		return b
	case readCloser:
		if lr, ok := b.Reader.(*io.LimitedReader); ok {
			if _, ok := lr.R.(*os.File); ok {
				return lr
			}
		}
	}
	return nil
}
