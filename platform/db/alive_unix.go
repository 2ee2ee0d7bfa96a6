//go:build unix

package db

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"syscall"

	"github.com/uptrace/bun/driver/pgdriver"
)

// checkAlive runs before a pooled PostgreSQL connection is reused. A server
// that restarted, failed over or ended the session (57P01 on shutdown) has
// closed the socket or left a termination notice on it while it sat idle in
// the pool; handing it out would fail the next query with EOF. A peek that
// neither waits nor consumes tells: readable data or end of stream on an idle
// connection means it is dead, and driver.ErrBadConn makes database/sql drop
// it and take another (or dial a new one). Cost: one non-blocking recv.
func checkAlive(_ context.Context, cn *pgdriver.Conn) error {
	nc := cn.Conn()
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return driver.ErrBadConn
	}
	dead := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n > 0: // data nobody asked for: a termination notice
			dead = true
		case n == 0 && rerr == nil: // end of stream
			dead = true
		case rerr != nil && !errors.Is(rerr, syscall.EAGAIN) && !errors.Is(rerr, syscall.EWOULDBLOCK) && !errors.Is(rerr, syscall.EINTR):
			dead = true
		}
		return true // never wait for readiness
	})
	if err != nil || dead {
		return driver.ErrBadConn
	}
	return nil
}
