//go:build linux

package app

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// rawPair is a TCP connection on loopback: the server's side read and
// written through socketIO, and the client's.
func rawPair(t *testing.T) (*rawSocket, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	s, ok := socketIO(server).(*rawSocket)
	if !ok {
		t.Fatalf("socketIO of a TCP connection is %T, want *rawSocket", socketIO(server))
	}
	return s, server, client
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSocketIO_NotTCPIsTheConnection: a connection that is not TCP (a
// listener's wrapper, a pipe) is read and written through itself.
func TestSocketIO_NotTCPIsTheConnection(t *testing.T) {
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	if got := socketIO(a); got != io.ReadWriter(a) {
		t.Fatalf("socketIO of a pipe is %T, want the pipe", got)
	}
}

// TestRawSocket_ReadsWhatArrivesThenEOF: reads wait for data, answer what
// has arrived in pieces of any size (one over rawMax too), and io.EOF with
// no error around it once the peer has closed.
func TestRawSocket_ReadsWhatArrivesThenEOF(t *testing.T) {
	s, _, client := rawPair(t)
	want := randomBytes(t, 3<<20)
	go func() {
		for rest := want; len(rest) > 0; {
			n := min(len(rest), 100_003)
			if _, err := client.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			time.Sleep(time.Millisecond) // the reader waits for data now and then
		}
		_ = client.Close()
	}()
	var got bytes.Buffer
	bufs := [][]byte{make([]byte, 4<<10), make([]byte, rawMax), make([]byte, 2*rawMax), make([]byte, 1)}
	for i := 0; ; i++ {
		n, err := s.Read(bufs[i%len(bufs)])
		got.Write(bufs[i%len(bufs)][:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", got.Len(), err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, not the %d sent", got.Len(), len(want))
	}
	if n, err := s.Read(make([]byte, 8)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read after EOF: %d, %v; want 0, EOF", n, err)
	}
}

// TestRawSocket_WritesWaitForRoom: a write larger than the socket takes at
// once (a small send buffer, a client that reads late) waits for room and
// sends every byte in order, whole writes and one over rawMax alike.
func TestRawSocket_WritesWaitForRoom(t *testing.T) {
	s, server, client := rawPair(t)
	if err := server.(*net.TCPConn).SetWriteBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	want := randomBytes(t, 4<<20)
	got := make(chan []byte)
	go func() {
		time.Sleep(50 * time.Millisecond) // the server's writes fill the socket first
		b, _ := io.ReadAll(client)
		got <- b
	}()
	for i, rest := 0, want; len(rest) > 0; i++ {
		n := min(len(rest), []int{rawMax, 1000, rawMax + 1}[i%3])
		m, err := s.Write(rest[:n])
		if err != nil || m != n {
			t.Fatalf("write of %d: %d, %v", n, m, err)
		}
		rest = rest[n:]
	}
	_ = server.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client read %d bytes, not the %d written", len(b), len(want))
	}
}

// TestRawSocket_DeadlinesAreTimeouts: a read or write past its deadline
// fails as net.Conn's do, a timeout named "read" or "write" (net/http ends
// its background read this way, and tells a timeout by it).
func TestRawSocket_DeadlinesAreTimeouts(t *testing.T) {
	s, server, _ := rawPair(t)
	if err := server.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(make([]byte, 512))
	checkOpError(t, err, "read", os.ErrDeadlineExceeded)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read error %v is not a timeout", err)
	}

	// The client reads nothing: the writes fill both buffers, then wait.
	if err := server.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	chunk := randomBytes(t, rawMax)
	for i := 0; ; i++ {
		if i > 10_000 {
			t.Fatal("the writes never waited")
		}
		if _, err = s.Write(chunk); err != nil {
			break
		}
	}
	checkOpError(t, err, "write", os.ErrDeadlineExceeded)
}

// TestRawSocket_CloseEndsAWaitingRead: closing the connection wakes a read
// waiting for data with net.ErrClosed.
func TestRawSocket_CloseEndsAWaitingRead(t *testing.T) {
	s, server, _ := rawPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 512))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	_ = server.Close()
	select {
	case err := <-errc:
		checkOpError(t, err, "read", net.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the read still waits after Close")
	}
}

// TestRawSocket_ResetIsASyscallError: a peer that resets the connection
// makes the next write fail with the system call's error, as net.Conn does.
func TestRawSocket_ResetIsASyscallError(t *testing.T) {
	s, _, client := rawPair(t)
	if err := client.(*net.TCPConn).SetLinger(0); err != nil { // close with a reset
		t.Fatal(err)
	}
	_ = client.Close()
	time.Sleep(20 * time.Millisecond)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = s.Write([]byte("after the reset"))
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write after a reset: %v, want ECONNRESET or EPIPE", err)
	}
	var se *os.SyscallError
	if !errors.As(err, &se) || se.Syscall != "write" {
		t.Fatalf("write after a reset: %#v, want an *os.SyscallError of write", err)
	}
	checkOpError(t, err, "write", se)
}

func checkOpError(t *testing.T, err error, op string, want error) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not a *net.OpError", err, err)
	}
	if oe.Op != op || oe.Net != "tcp" || oe.Source == nil || oe.Addr == nil {
		t.Fatalf("error %v: op %q net %q source %v addr %v; want op %q on tcp with both addresses", err, oe.Op, oe.Net, oe.Source, oe.Addr, op)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v is not %v", err, want)
	}
}
