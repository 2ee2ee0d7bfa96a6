package app

import (
	"net"
	"net/http"
	"strconv"
	"sync"
)

// A whole response in one write.
//
// net/http writes a response through a 4 KiB buffer over the connection: the
// header and the body's first bytes fill it and go in one write syscall, the
// rest of the body in a second (a third for a body written in pieces). A
// response whose body the handler writes in one Write of its declared
// Content-Length (a cached document: httpx.WriteRepresentation) is complete
// when that Write returns, so its connection gathers what net/http writes
// meanwhile, the buffer is flushed, and the gathered bytes go in one write.
// On loopback each write syscall, with the segment it sends, cost ~7 µs of
// the settings document's ~52 µs (perf, workload G of ../shared/bench; its
// gzip form is 6.7 KB, two writes).
//
// Only such a body is gathered: a handler that writes in pieces or flushes
// (an export, an event stream) is sent as it writes, and a file goes to the
// kernel through ReadFrom, as before. The gathered bytes are held only while
// that one Write runs, in a buffer of the pool.

// Bodies gathered: from gatherMin, as a smaller one and its header usually
// fit in net/http's buffer (one write already), up to gatherMax, which
// bounds the copy and the buffer.
const (
	gatherMin = 2 << 10
	gatherMax = 64 << 10
)

// gatherPool holds the buffers of the responses being gathered.
var gatherPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 8<<10)
	return &b
}}

// gatherer is the connection under c that can gather, or nil.
func gatherer(c net.Conn) *limitedConn {
	switch c := c.(type) {
	case readerFromConn:
		return c.limitedConn
	case *limitedConn:
		return c
	}
	return nil
}

// wholeBody tells whether a first Write of n bytes is the whole body the
// header declares, and worth gathering.
func wholeBody(h http.Header, n int) bool {
	if n < gatherMin || n > gatherMax {
		return false
	}
	v := h["Content-Length"]
	if len(v) != 1 {
		return false
	}
	declared, err := strconv.Atoi(v[0])
	return err == nil && declared == n
}

// writeWhole writes p, the whole body, and sends the response, header
// included, in one write on the connection.
func (w *progressWriter) writeWhole(p []byte) (n int, err error) {
	c := w.conn.gather
	w.arm(len(p))
	c.gather()
	defer func() { // also on a panic: the connection must not go on holding
		if serr := c.send(); err == nil {
			err = serr
		}
	}()
	if n, err = w.ResponseWriter.Write(p); err == nil {
		// The body is complete: flushing now sends nothing net/http would
		// not send once the handler returns, and the header already declared
		// the length, so the response is not turned into chunks.
		err = w.rc.Flush()
	}
	return n, err
}

// gather starts holding what is written to the connection.
func (c *limitedConn) gather() {
	c.heldMu.Lock()
	c.held = gatherPool.Get().(*[]byte)
	c.heldMu.Unlock()
}

// send writes what was held in one write and stops holding.
func (c *limitedConn) send() error {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	b := c.held
	c.held = nil
	var err error
	if len(*b) > 0 {
		_, err = c.io.Write(*b)
	}
	if cap(*b) <= 4*gatherMax {
		*b = (*b)[:0]
		gatherPool.Put(b)
	}
	return err
}

// Write holds p while a response is gathered, and writes it otherwise.
func (c *limitedConn) Write(p []byte) (int, error) {
	c.heldMu.Lock()
	if c.held == nil {
		c.heldMu.Unlock()
		return c.io.Write(p)
	}
	*c.held = append(*c.held, p...)
	c.heldMu.Unlock()
	return len(p), nil
}
