package app

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wholeBodyHandler answers body in one Write of its declared length, as a
// cached document is written (httpx.WriteRepresentation).
func wholeBodyHandler(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
	})
}

// TestWholeResponse_200_OneWritePerResponse: a body written whole, in one
// Write of its Content-Length, goes out with its header in one write on the
// connection, request after request on a kept-alive connection, for every
// size gathered (the smallest, the settings document in gzip and plain, the
// largest) and for HEAD; and arrives intact.
func TestWholeResponse_200_OneWritePerResponse(t *testing.T) {
	for _, size := range []int{gatherMin, 6719, 34 << 10, gatherMax} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			body := make([]byte, size)
			for i := range body {
				body[i] = byte('a' + i%26)
			}
			writes := &atomic.Int64{}
			addr, _ := deadlineServerClosed(t, testDeadlines, wholeBodyHandler(body), func(ln net.Listener) net.Listener { return countWrites{ln, writes} })
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			br := bufio.NewReader(c)
			for i, method := range []string{http.MethodGet, http.MethodGet, http.MethodHead, http.MethodGet} {
				before := writes.Load()
				if _, err := fmt.Fprintf(c, "%s /doc HTTP/1.1\r\nHost: x\r\n\r\n", method); err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest(method, "/doc", nil)
				res, err := http.ReadResponse(br, req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				got, err := io.ReadAll(res.Body)
				_ = res.Body.Close()
				want := body
				if method == http.MethodHead {
					want = nil
				}
				if err != nil || res.StatusCode != http.StatusOK || !bytes.Equal(got, want) || res.ContentLength != int64(size) {
					t.Fatalf("request %d (%s): status %d, length %d, %d of %d bytes, %v", i, method, res.StatusCode, res.ContentLength, len(got), len(want), err)
				}
				if n := writes.Load() - before; n != 1 {
					t.Fatalf("request %d (%s): the response took %d writes on the connection, want 1", i, method, n)
				}
			}
		})
	}
}

// TestWholeResponse_200_APartIsSentAsWritten: a first Write shorter than the
// declared Content-Length is not the whole body, so nothing is held: what
// net/http sends of it reaches the client while the handler still waits for
// the rest.
func TestWholeResponse_200_APartIsSentAsWritten(t *testing.T) {
	first, rest := bytes.Repeat([]byte("a"), 6<<10), bytes.Repeat([]byte("b"), 6<<10)
	received := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(first)+len(rest)))
		_, _ = w.Write(first)
		select {
		case <-received:
		case <-time.After(5 * time.Second):
		}
		_, _ = w.Write(rest)
	})
	addr := deadlineServer(t, testDeadlines, h)
	res, err := http.Get("http://" + addr + "/part")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	// 3 KB of the first part fit net/http's 4 KiB buffer with the header.
	head := make([]byte, 3<<10)
	start := time.Now()
	if _, err := io.ReadFull(res.Body, head); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("the first part arrived after %v: it was held until the handler ended", waited)
	}
	close(received)
	tail, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(append(head, tail...), append(first, rest...)) {
		t.Fatalf("%d bytes, %v", len(head)+len(tail), err)
	}
}

// TestWholeResponse_200_AFlushedStreamIsSentAsWritten: a handler that writes
// pieces without a length and flushes them (an event stream, an export) has
// each piece reach the client before it writes the next.
func TestWholeResponse_200_AFlushedStreamIsSentAsWritten(t *testing.T) {
	const pieces = 3
	next := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range pieces {
			_, _ = fmt.Fprintf(w, "%s\n", strings.Repeat(string(rune('a'+i)), 3<<10))
			_ = http.NewResponseController(w).Flush()
			select {
			case <-next:
			case <-time.After(5 * time.Second):
				return
			}
		}
	})
	addr := deadlineServer(t, testDeadlines, h)
	res, err := http.Get("http://" + addr + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	br := bufio.NewReader(res.Body)
	for i := range pieces {
		start := time.Now()
		line, err := br.ReadString('\n')
		if err != nil || len(line) != 3<<10+1 || line[0] != byte('a'+i) {
			t.Fatalf("piece %d: %d bytes, %v", i, len(line), err)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("piece %d arrived after %v: it was held", i, waited)
		}
		next <- struct{}{}
	}
}

// TestWholeResponse_200_ALargerBodyIsNotGathered: past gatherMax a whole
// body is written as net/http writes it, in more than one write, so the
// connection never holds more than gatherMax of a body.
func TestWholeResponse_200_ALargerBodyIsNotGathered(t *testing.T) {
	body := bytes.Repeat([]byte("l"), gatherMax+1)
	if n := writesOfGet(t, wholeBodyHandler(body), body); n < 2 {
		t.Fatalf("a body over gatherMax went out in %d write", n)
	}
}
