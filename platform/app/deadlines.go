package app

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agritrade/api/platform/config"
	"github.com/agritrade/api/platform/procs"
)

// Deadlines that move with progress. net/http's ReadTimeout and WriteTimeout
// are for the whole request or response: any value that stops a slow-loris
// also cuts a legitimate 50 MiB upload or download over a slow mobile link. So
// the server keeps only ReadHeaderTimeout (the header is small) and the
// handler below sets per-connection deadlines that move as bytes move:
//
//   - request body: each read may wait at most BodyIdleTimeout for data, and
//     the body must average BodyMinRate bytes a second over the time spent
//     waiting for it, after a first BodyIdleTimeout of grace. Only time spent
//     waiting counts, not the time a handler spends working between reads. A
//     client sending 1 byte every few seconds is cut after about
//     BodyIdleTimeout; an upload moving at BodyMinRate or more never is.
//   - response: each writeChunk of it must be taken by the client within
//     WriteIdleTimeout, so a stalled download is cut and a slow one (anything
//     over writeChunk per WriteIdleTimeout, 550 B/s with the defaults) is not.
//     A deadline is set half as long again and renewed only once less than
//     WriteIdleTimeout of it is left, per connection: setting one updates a
//     runtime timer under a lock, and a keep-alive connection answering
//     thousands of small requests a second then needs one every half
//     WriteIdleTimeout instead of two per request. Each chunk still gets at
//     least WriteIdleTimeout. A write's last piece takes in a remainder
//     shorter than writeChunk (with time for its length at the same rate):
//     split off, that tail is buffered by net/http and sent with a write
//     syscall of its own after the handler returns (on loopback each write
//     syscall costs several microseconds). A whole body of up to 64 KiB is
//     not split at all: it goes out with its header in one write (gather.go).
//   - connections: at most MaxConns open at once; more wait in the backlog.

// writeChunk is the piece of a response each write deadline covers.
const writeChunk = 32 << 10

// errSlowBody is the read error of a body below its minimum rate.
var errSlowBody = errors.New("request body arrives slower than the minimum rate")

// newHTTPServer is the server of Serve, with the header bounds and the
// progress deadlines of cfg around h.
func newHTTPServer(cfg config.HTTP, h http.Handler) *http.Server {
	header := cfg.ReadHeaderTimeout
	if header <= 0 {
		header = 10 * time.Second
	}
	maxHeader := cfg.MaxHeaderKB << 10
	if maxHeader <= 0 {
		maxHeader = 64 << 10
	}
	return &http.Server{
		Handler:           sampled(progressDeadlines(cfg, h)),
		ReadHeaderTimeout: header,
		MaxHeaderBytes:    maxHeader,
		IdleTimeout:       2 * time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connWritesKey{}, &connWrites{gather: gatherer(c)})
		},
	}
}

// sampled lets the GOMAXPROCS governor (platform/procs) sample the process
// as each request starts: under load it then needs no timer of its own.
func sampled(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		procs.Poke()
		h.ServeHTTP(w, r)
	})
}

// connWrites is the write deadline last set on a connection (unix ns). The
// server is HTTP/1 only (no TLS, no h2c), so one request at a time uses it;
// atomic all the same, for a handler's goroutine that writes after another's.
type connWrites struct {
	until atomic.Int64
	// gather is the connection as the listener accepted it, which can send a
	// whole response in one write (gather.go); nil on another listener.
	gather *limitedConn
}

type connWritesKey struct{}

// limitListener caps the connections open at once (none when max <= 0): more
// wait in the backlog. Every connection it accepts can gather a response
// into one write (gather.go). Its connections keep the ReadFrom of the
// connection they wrap, because net/http hands a file to the kernel
// (sendfile) only through the connection's ReadFrom (x/net/netutil's wrapper
// hides it, and every download was then read into the process and written
// out again).
func limitListener(ln net.Listener, max int) net.Listener {
	l := &limitedListener{Listener: ln, done: make(chan struct{})}
	if max > 0 {
		l.slots = make(chan struct{}, max)
	}
	return l
}

type limitedListener struct {
	net.Listener
	slots  chan struct{} // one value per open connection; nil: no limit
	closed sync.Once
	done   chan struct{} // closed by Close: an Accept waiting for a slot returns
}

func (l *limitedListener) Accept() (net.Conn, error) {
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		if l.slots != nil {
			<-l.slots
		}
		return nil, err
	}
	lc := &limitedConn{Conn: c, io: socketIO(c)}
	if l.slots != nil {
		lc.release = func() { <-l.slots }
	}
	if _, ok := c.(io.ReaderFrom); ok {
		return readerFromConn{lc}, nil
	}
	return lc, nil
}

func (l *limitedListener) Close() error {
	err := l.Listener.Close()
	l.closed.Do(func() { close(l.done) })
	return err
}

// limitedConn is a connection the server accepted: it gives its slot back
// when it is closed (once, however often), can gather a response into one
// write (gather.go), and reads and writes a TCP socket without the
// scheduler's system-call hand-off (rawio_linux.go).
type limitedConn struct {
	net.Conn
	released sync.Once
	release  func() // nil: no slot to give back
	// held is what was written while a response is gathered (gather.go),
	// nil otherwise.
	heldMu sync.Mutex
	held   *[]byte
	// io reads and writes the connection (rawio_linux.go).
	io io.ReadWriter
}

func (c *limitedConn) Read(p []byte) (int, error) { return c.io.Read(p) }

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.release != nil {
		c.released.Do(c.release)
	}
	return err
}

// readerFromConn is a limitedConn over a connection with ReadFrom (TCP).
type readerFromConn struct{ *limitedConn }

func (c readerFromConn) ReadFrom(r io.Reader) (int64, error) {
	return c.Conn.(io.ReaderFrom).ReadFrom(r)
}

// progressDeadlines wraps h with the body and response deadlines of cfg.
func progressDeadlines(cfg config.HTTP, h http.Handler) http.Handler {
	idle, rate, writeIdle := cfg.BodyIdleTimeout, cfg.BodyMinRate, cfg.WriteIdleTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if idle > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			// Also bounds what the server reads of an unread body after the handler.
			_ = rc.SetReadDeadline(time.Now().Add(idle))
			r.Body = &progressBody{ReadCloser: r.Body, rc: rc, idle: idle, rate: rate}
		}
		var pw *progressWriter
		if writeIdle > 0 {
			conn, _ := r.Context().Value(connWritesKey{}).(*connWrites)
			if conn == nil {
				conn = &connWrites{}
			}
			pw = &progressWriter{ResponseWriter: w, rc: rc, idle: writeIdle, conn: conn}
			w = pw
		}
		h.ServeHTTP(w, r)
		if pw != nil {
			// What the handler left buffered is written after it returns.
			pw.arm(0)
		}
	})
}

// progressBody sets the connection's read deadline before each read of the body.
type progressBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	idle   time.Duration
	rate   int64
	read   int64
	waited time.Duration
	done   bool
}

func (b *progressBody) Read(p []byte) (int, error) {
	if b.done {
		// At the end of the body the server's own background read takes the
		// connection over (it clears the deadline): leave it alone.
		return b.ReadCloser.Read(p)
	}
	allowed := b.idle
	if b.rate > 0 {
		earned := time.Duration(float64(b.read) / float64(b.rate) * float64(time.Second))
		allowed = min(allowed, b.idle+earned-b.waited)
	}
	start := time.Now()
	if allowed <= 0 {
		_ = b.rc.SetReadDeadline(start) // the connection is dropped, not drained
		return 0, errSlowBody
	}
	_ = b.rc.SetReadDeadline(start.Add(allowed))
	n, err := b.ReadCloser.Read(p)
	b.waited += time.Since(start)
	b.read += int64(n)
	if err != nil {
		b.done = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = errSlowBody
		}
	}
	return n, err
}

// progressWriter sets the connection's write deadline before each chunk.
type progressWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	idle  time.Duration
	conn  *connWrites
	wrote bool // a Write came
}

// arm makes sure the connection's write deadline leaves time for n bytes:
// idle for a writeChunk or less, proportionally more for a longer piece.
func (w *progressWriter) arm(n int) {
	need := w.idle
	if n > writeChunk {
		need = time.Duration(int64(w.idle) * int64(n) / writeChunk)
	}
	now := time.Now()
	if w.conn.until.Load()-now.UnixNano() >= int64(need) {
		return
	}
	until := now.Add(need + w.idle/2)
	_ = w.rc.SetWriteDeadline(until)
	w.conn.until.Store(until.UnixNano())
}

func (w *progressWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.wrote = true
		if w.conn.gather != nil && wholeBody(w.Header(), len(p)) {
			return w.writeWhole(p)
		}
	}
	written := 0
	for len(p) > 0 {
		n := writeChunk
		if len(p) < 2*writeChunk {
			n = len(p) // the last piece, with the tail it would leave
		}
		w.arm(n)
		m, err := w.ResponseWriter.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Flush sends what is buffered under a fresh deadline.
func (w *progressWriter) Flush() {
	w.arm(0)
	_ = w.rc.Flush()
}

// ReadFrom sends a file that the kernel copies (src an *os.File, or an
// *io.LimitedReader of one: net/http hands it to sendfile) through the
// server's ReadFrom. Each call may take WriteIdleTimeout; one that the
// deadline ends after it sent writeChunk or more is resumed from where the
// file stands, so the rule is Write's (writeChunk per WriteIdleTimeout)
// while the kernel moves the bytes in as few calls as it needs. Any other
// source is written through Write, in chunks under their deadlines.
func (w *progressWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	f := kernelFile(src)
	if !ok || f == nil {
		return io.CopyBuffer(writeOnly{w}, src, make([]byte, writeChunk))
	}
	var sent int64
	for {
		from, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return sent, err
		}
		until := time.Now().Add(w.idle)
		_ = w.rc.SetWriteDeadline(until)
		w.conn.until.Store(until.UnixNano())
		n, err := rf.ReadFrom(src)
		sent += n
		if err == nil || n < writeChunk || !errors.Is(err, os.ErrDeadlineExceeded) {
			return sent, err
		}
		// Resumed only if every byte taken from the file was sent (a copy
		// that is not the kernel's may have read more than it wrote).
		if at, serr := f.Seek(0, io.SeekCurrent); serr != nil || at != from+n {
			return sent, err
		}
	}
}

// kernelFile is the file under a source sendfile can copy, or nil.
func kernelFile(src io.Reader) *os.File {
	if lr, ok := src.(*io.LimitedReader); ok {
		src = lr.R
	}
	f, _ := src.(*os.File)
	return f
}

// writeOnly hides a writer's ReadFrom from io.CopyBuffer.
type writeOnly struct{ io.Writer }

// Hijack hands the connection over without the deadlines.
func (w *progressWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := w.rc.Hijack()
	if err == nil {
		_ = conn.SetDeadline(time.Time{})
		w.conn.until.Store(0)
	}
	return conn, rw, err
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
