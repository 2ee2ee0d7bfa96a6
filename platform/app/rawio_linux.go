//go:build linux

package app

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Socket reads and writes without the scheduler's system-call hand-off.
//
// A read or write through net.Conn is a system call the runtime is told may
// block (entersyscall): the processor is marked as in a system call, a
// sleeping sysmon is woken (a futex wake) and, on its next tick (20 µs), takes
// the processor away from a call still running and hands it on. The server's
// sockets are non-blocking: read and write never wait, they answer EAGAIN and
// the goroutine parks on the network poller. So the hand-off is pure cost,
// paid twice a request or more, and dear where the process is not saturated:
// each time it goes idle sysmon sleeps, the next call wakes it, and it then
// polls every 20 µs for a millisecond. Measured on the settings document
// (workload G of ../shared/bench, 2 cores, ~4,500 requests a second, one
// processor): per request 0.83 nanosleeps and 0.32 futex calls before, 0.07
// and 0.13 after, and 7 to 12% less CPU. cloudwego/netpoll reads and writes its
// sockets the same way.
//
// The calls still go through the connection's poller (syscall.RawConn): its
// deadlines, its close and its wait for readiness are net's own. A call holds
// its processor for as long as the kernel copies, so only pieces of up to
// rawMax go this way; a larger read or write (an upload read with a big
// buffer) takes the usual path, where the runtime may hand the processor over
// during a long copy, as does a file sent with sendfile (ReadFrom).

// rawMax bounds a read or write made without the hand-off: a 64 KiB copy
// takes the kernel microseconds.
const rawMax = 64 << 10

// socketIO is how the server reads and writes c: without the hand-off for a
// TCP connection, through c otherwise.
func socketIO(c net.Conn) io.ReadWriter {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	s := &rawSocket{conn: c, rc: rc}
	// Bound once: a method value made at each call would be an allocation.
	s.read.fn, s.write.fn = s.readOnce, s.writeAll
	return s
}

// rawSocket reads and writes a TCP connection with raw system calls.
type rawSocket struct {
	conn        net.Conn
	rc          syscall.RawConn
	read, write rawCall
}

// rawCall is one direction of a rawSocket: the callback handed to the
// RawConn (readOnce, writeAll) takes its buffer here and leaves its result,
// one call at a time.
type rawCall struct {
	mu  sync.Mutex
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// run calls fn over p until it is done, waiting on rc's poller for the
// socket to be ready (readable, or writable when write is set).
func (c *rawCall) run(rc syscall.RawConn, p []byte, write bool) (int, error) {
	c.mu.Lock()
	c.buf, c.n, c.err = p, 0, nil
	var err error
	if write {
		err = rc.Write(c.fn)
	} else {
		err = rc.Read(c.fn)
	}
	n := c.n
	if err == nil {
		err = c.err
	}
	c.buf = nil
	c.mu.Unlock()
	return n, err
}

func (s *rawSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > rawMax {
		return s.conn.Read(p)
	}
	n, err := s.read.run(s.rc, p, false)
	if err == nil || errors.Is(err, io.EOF) { // io.EOF itself: the rest is the system call's
		return n, err
	}
	return n, s.opError("read", err)
}

// readOnce reads what the socket holds; false: nothing yet, wait.
func (s *rawSocket) readOnce(fd uintptr) bool {
	for {
		// The buffer's address for read(2): the caller holds the slice for
		// the call, and Go's heap does not move.
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.read.buf[0])), uintptr(len(s.read.buf)))
		switch e {
		case 0:
			s.read.n = int(n)
			if n == 0 {
				s.read.err = io.EOF
			}
			return true
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			s.read.err = os.NewSyscallError("read", e)
			return true
		}
	}
}

func (s *rawSocket) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > rawMax {
		return s.conn.Write(p)
	}
	n, err := s.write.run(s.rc, p, true)
	if err != nil {
		err = s.opError("write", err)
	}
	return n, err
}

// writeAll writes what is left of the buffer; false: the socket is full,
// wait until it takes more.
func (s *rawSocket) writeAll(fd uintptr) bool {
	w := &s.write
	for w.n < len(w.buf) {
		rest := w.buf[w.n:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			w.n += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.err = os.NewSyscallError("write", e)
			return true
		}
	}
	return true
}

// opError is err as net.Conn's Read and Write report it: net/http tells a
// timeout, a closed connection and a reset by these. A RawConn's own errors
// (deadline, close) are a new *net.OpError per call, named "raw-read" or
// "raw-write": renamed in place, as one comes with most requests (net/http
// ends its background read of each with a deadline).
func (s *rawSocket) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok { //nolint:errorlint // RawConn's own, never wrapped
		oe.Op = op
		return oe
	}
	return &net.OpError{Op: op, Net: "tcp", Source: s.conn.LocalAddr(), Addr: s.conn.RemoteAddr(), Err: err}
}
