package app

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agritrade/api/platform/config"
)

// Short deadlines, so that the tests run in seconds; the rules are those of
// the defaults (60 s idle, 1 KiB/s, 60 s per 32 KiB written).
var testDeadlines = config.HTTP{
	ReadHeaderTimeout: 500 * time.Millisecond,
	MaxHeaderKB:       16,
	BodyIdleTimeout:   500 * time.Millisecond,
	BodyMinRate:       4 << 10,
	WriteIdleTimeout:  500 * time.Millisecond,
	MaxConns:          0,
}

// deadlineServer serves h behind the progress deadlines on a real listener.
func deadlineServer(t *testing.T, cfg config.HTTP, h http.Handler) string {
	addr, _ := deadlineServerClosed(t, cfg, h)
	return addr
}

// deadlineServerClosed is deadlineServer that also counts the connections the
// server has closed.
func deadlineServerClosed(t *testing.T, cfg config.HTTP, h http.Handler, wrap ...func(net.Listener) net.Listener) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wrap {
		ln = w(ln)
	}
	srv := newHTTPServer(cfg, h)
	closed := &atomic.Int64{}
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed.Add(1)
		}
	}
	go func() { _ = srv.Serve(limitListener(ln, cfg.MaxConns)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return ln.Addr().String(), closed
}

// readAllBody answers how many body bytes it read, or the read error.
func readAllBody(got *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		got.Store(n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = fmt.Fprintf(w, "%d", n)
	})
}

func openFDs(t *testing.T) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(e)
}

// waitClosed reads from c until the server closes it; false when it is still
// open at the deadline.
func waitClosed(c net.Conn, within time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// TestSlowClientsAreCut: a flood of connections that send their headers or
// bodies a byte at a time are all closed by the server soon after the
// deadlines, and their file descriptors are released.
func TestSlowClientsAreCut(t *testing.T) {
	var got atomic.Int64
	addr := deadlineServer(t, testDeadlines, readAllBody(&got))
	before := openFDs(t)
	const flood = 100
	conns := make([]net.Conn, 0, 2*flood)
	for i := range 2 * flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if i%2 == 0 { // a body that dribbles
			_, _ = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nx")
		} else { // headers that dribble
			_, _ = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\n")
		}
	}
	// Keep dribbling a byte each 100 ms (each read gets data well within the
	// idle timeout: only the rate rule and the header timeout can cut them).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for i, c := range conns {
				if i%2 == 0 {
					_, _ = c.Write([]byte("x"))
				} else {
					_, _ = c.Write([]byte("X"))
				}
			}
		}
	})
	var open int
	for _, c := range conns {
		if !waitClosed(c, 10*time.Second) {
			open++
		}
	}
	close(stop)
	wg.Wait()
	for _, c := range conns {
		_ = c.Close()
	}
	if open > 0 {
		t.Fatalf("%d of %d slow connections still open after 10 s", open, len(conns))
	}
	// The server's side of every connection is closed: its descriptors are back.
	deadline := time.Now().Add(5 * time.Second)
	for openFDs(t) > before+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := openFDs(t); n > before+5 {
		t.Fatalf("%d file descriptors open, %d before the flood", n, before)
	}
}

// TestSlowUploadThatMovesCompletes: an upload at a steady 8 KiB/s (twice the
// minimum rate) that lasts many idle timeouts completes, and so does one whose
// handler works longer than the idle timeout between reads.
func TestSlowUploadThatMovesCompletes(t *testing.T) {
	var got atomic.Int64
	addr := deadlineServer(t, testDeadlines, readAllBody(&got))
	const size = 24 << 10 // 3 s at 8 KiB/s, six idle timeouts
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte("u"), 1<<10)
		for range size / len(chunk) {
			time.Sleep(125 * time.Millisecond)
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/upload", pr)
	req.ContentLength = size
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != fmt.Sprint(size) {
		t.Fatalf("slow upload: %d %s", res.StatusCode, body)
	}

	t.Run("handler busy between reads", func(t *testing.T) {
		addr := deadlineServer(t, testDeadlines, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			buf := make([]byte, 1000)
			if _, err := io.ReadFull(r.Body, buf); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			time.Sleep(1500 * time.Millisecond) // three idle timeouts of work
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			_, _ = fmt.Fprintf(w, "%d", n+1000)
		}))
		res, err := http.Post("http://"+addr+"/upload", "text/plain", strings.NewReader(strings.Repeat("b", 200<<10)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || string(body) != fmt.Sprint(200<<10) {
			t.Fatalf("busy handler: %d %s", res.StatusCode, body)
		}
	})
}

// TestDownloads: a client that stops reading is cut (the handler's write
// fails and the connection closes), while one reading slowly but steadily
// gets every byte.
func TestDownloads(t *testing.T) {
	const size = 4 << 20
	writeErr := make(chan error, 4)
	file := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, err := w.Write(bytes.Repeat([]byte("d"), size)) // one large write: chunked by the deadlines
		writeErr <- err
	})

	t.Run("stalled", func(t *testing.T) {
		// Small buffers on both ends, as on a mobile link: on loopback the
		// kernel may otherwise buffer all 4 MiB (machines differ in how far
		// they let socket buffers grow), and the write would never wait.
		if err := stalledDownload(t, file, writeErr); err == nil {
			t.Fatal("a stalled download was written to the end")
		}
	})

	t.Run("slow but moving", func(t *testing.T) {
		cfg := testDeadlines
		cfg.WriteIdleTimeout = 300 * time.Millisecond
		// 32 KiB each 25 ms, pausing throughout (about 3.3 s, ten write
		// deadlines and more): most of the server's writes wait on the
		// client, and none may be cut.
		n := len(slowDownload(t, cfg, file, 32<<10, 25*time.Millisecond))
		if n != size {
			t.Fatalf("read %d of %d bytes", n, size)
		}
		if err := <-writeErr; err != nil {
			t.Fatalf("the slow download's write failed: %v", err)
		}
	})
}

// requestFile serves h behind cfg and sends GET /file on a new connection.
// Both ends have small socket buffers, as on a slow mobile link, where they
// stay near the small bandwidth-delay product: on loopback the kernel grows
// them to megabytes (machines differ in how far), and a write would then
// hardly ever wait on the client. It answers the connection and the count of
// connections the server has closed.
func requestFile(t *testing.T, cfg config.HTTP, h http.Handler) (net.Conn, *atomic.Int64) {
	t.Helper()
	addr, closed := deadlineServerClosed(t, cfg, h, func(ln net.Listener) net.Listener { return smallSendBuffers{ln} })
	// The receive buffer is set before the connection is made, as a phone's
	// is: shrunk after the handshake (the window scale is agreed by then),
	// it left a reader paced at 3 MB/s getting 32 KiB writes at ~140 KB/s.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, _ = io.WriteString(c, "GET /file HTTP/1.1\r\nHost: x\r\n\r\n")
	return c, closed
}

// stalledDownload GETs /file from h behind testDeadlines and reads nothing:
// the socket buffers fill and the server must give up. It answers the error
// h reported, once the server has closed the connection.
func stalledDownload(t *testing.T, h http.Handler, handlerErr <-chan error) error {
	t.Helper()
	_, closed := requestFile(t, testDeadlines, h)
	var err error
	select {
	case err = <-handlerErr:
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled download is still held after 10 s")
	}
	deadline := time.Now().Add(5 * time.Second)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closed.Load() == 0 {
		t.Fatal("the server still holds the stalled connection")
	}
	return err
}

// slowDownload GETs /file from h behind cfg and reads the body chunk bytes
// each pause; it answers what it read.
func slowDownload(t *testing.T, cfg config.HTTP, h http.Handler, chunk int, pause time.Duration) []byte {
	t.Helper()
	c, _ := requestFile(t, cfg, h)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var got bytes.Buffer
	buf := make([]byte, chunk)
	for {
		m, err := io.ReadFull(res.Body, buf)
		got.Write(buf[:m])
		if err != nil {
			return got.Bytes()
		}
		time.Sleep(pause)
	}
}

// smallSendBuffers gives accepted connections a 64 KiB send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// TestMaxConns: connections over the cap wait in the backlog until one closes.
func TestMaxConns(t *testing.T) {
	cfg := testDeadlines
	cfg.MaxConns = 2
	addr := deadlineServer(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	held := make([]net.Conn, 0, 2)
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		// A request answered, the connection then idles (keep-alive).
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("held connection: %v", err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("held connection: %d", res.StatusCode)
		}
	}
	third, err := net.Dial("tcp", addr) // accepted by the kernel, not by the server
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = third.Close() }()
	_, _ = io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := third.Read(make([]byte, 1)); err == nil {
		t.Fatal("a third connection was served while two were open")
	}
	_ = held[0].Close()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the waiting connection after one closed: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the waiting connection after one closed: %d", res.StatusCode)
	}
	_ = held[1].Close()
}

// TestDownloads_200_TailInTheLastWrite: a body a little over two writeChunks
// (too large to be gathered into one write, gather.go) reaches the connection
// in three writes: net/http's 4 KiB buffer with the header and the rest of
// the first chunk, then the last piece with the tail, not with its tail past
// writeChunk buffered and sent in a write of its own.
func TestDownloads_200_TailInTheLastWrite(t *testing.T) {
	body := bytes.Repeat([]byte("s"), 2*writeChunk+1450)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
	})
	if n := writesOfGet(t, h, body); n > 3 {
		t.Fatalf("the response took %d writes on the connection, want 3", n)
	}
}

// writesOfGet serves h, sends it a GET on a new connection, checks that the
// answer is 200 with body want, and answers how many writes the server made
// on the connection.
func writesOfGet(t *testing.T, h http.Handler, want []byte) int64 {
	t.Helper()
	writes := &atomic.Int64{}
	addr, _ := deadlineServerClosed(t, testDeadlines, h, func(ln net.Listener) net.Listener { return countWrites{ln, writes} })
	res, err := http.Get("http://" + addr + "/doc")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Fatalf("status %d, %d of %d bytes, %v", res.StatusCode, len(got), len(want), err)
	}
	return writes.Load()
}

// countWrites counts the writes on the connections it accepts.
type countWrites struct {
	net.Listener
	n *atomic.Int64
}

func (l countWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return countedConn{c, l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// sendFileHandler answers the file at path through the writer's ReadFrom, as
// a download of a local file does (httpx.Stream), and reports the error.
func sendFileHandler(t *testing.T, path string, size int64, sendErr chan<- error) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			sendErr <- err
			return
		}
		defer func() { _ = f.Close() }()
		w.Header().Set("Content-Length", fmt.Sprint(size))
		rf, ok := w.(io.ReaderFrom)
		if !ok {
			sendErr <- errors.New("the server's writer has no ReadFrom")
			return
		}
		_, err = rf.ReadFrom(&io.LimitedReader{R: f, N: size})
		sendErr <- err
	})
}

// randomFile writes size pseudo-random bytes to a file of the test: a byte
// sent twice or lost shows in the comparison.
func randomFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	x := uint32(2463534242)
	for i := range data {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		data[i] = byte(x)
	}
	path := t.TempDir() + "/file.bin"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestDownloads_200_AFileSentByTheKernelGoesOnWhileItMoves: a file sent
// through ReadFrom (sendfile) to a client that reads slowly, longer than
// several write deadlines, arrives whole and in order: each call the
// deadline ends is resumed from where the file stands.
func TestDownloads_200_AFileSentByTheKernelGoesOnWhileItMoves(t *testing.T) {
	const size = 2 << 20
	path, data := randomFile(t, size)
	sendErr := make(chan error, 1)
	cfg := testDeadlines
	cfg.WriteIdleTimeout = 300 * time.Millisecond
	// 32 KiB each 25 ms (~1.3 MB/s, well over writeChunk per deadline):
	// about 1.6 s in all, five deadlines or more.
	got := slowDownload(t, cfg, sendFileHandler(t, path, size, sendErr), 32<<10, 25*time.Millisecond)
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes of %d, or not the file's", len(got), size)
	}
	if err := <-sendErr; err != nil {
		t.Fatalf("the send failed: %v", err)
	}
}

// TestDownloads_AFileSentByTheKernelToAStalledClientIsCut: the send of a
// file to a client that stops reading ends with an error soon after the
// write deadline, and the connection is closed.
func TestDownloads_AFileSentByTheKernelToAStalledClientIsCut(t *testing.T) {
	const size = 4 << 20
	path, _ := randomFile(t, size)
	sendErr := make(chan error, 1)
	if err := stalledDownload(t, sendFileHandler(t, path, size, sendErr), sendErr); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stalled send ended with %v, want the write deadline", err)
	}
}

// TestMaxConns_200_FilesStillGoToTheKernel: behind the connection limit, a
// file sent through ReadFrom reaches the connection's own ReadFrom (where
// net/http's sendfile is), not its Write: only the header and the first
// bytes net/http sniffs are written.
func TestMaxConns_200_FilesStillGoToTheKernel(t *testing.T) {
	const size = 1 << 20
	path, data := randomFile(t, size)
	sendErr := make(chan error, 1)
	cfg := testDeadlines
	cfg.MaxConns = 2
	var written, readFrom atomic.Int64
	addr, _ := deadlineServerClosed(t, cfg, sendFileHandler(t, path, size, sendErr), func(ln net.Listener) net.Listener {
		return tallyListener{ln, &written, &readFrom}
	})
	res, err := http.Get("http://" + addr + "/file")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
		t.Fatalf("status %d, %d of %d bytes, %v", res.StatusCode, len(got), size, err)
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if w, r := written.Load(), readFrom.Load(); w > 4<<10 || r < size-512 {
		t.Fatalf("%d bytes written, %d through ReadFrom: want the header and 512 bytes written, the rest through ReadFrom", w, r)
	}
}

// tallyListener counts what its TCP connections are given by Write and by
// ReadFrom.
type tallyListener struct {
	net.Listener
	written, readFrom *atomic.Int64
}

func (l tallyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return tallyConn{c.(*net.TCPConn), l.written, l.readFrom}, nil
}

type tallyConn struct {
	*net.TCPConn
	written, readFrom *atomic.Int64
}

func (c tallyConn) Write(p []byte) (int, error) {
	n, err := c.TCPConn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

func (c tallyConn) ReadFrom(r io.Reader) (int64, error) {
	n, err := c.TCPConn.ReadFrom(r)
	c.readFrom.Add(n)
	return n, err
}
