//go:build !linux

package app

import (
	"io"
	"net"
)

// socketIO is how the server reads and writes c: through c itself (the raw
// system calls of rawio_linux.go are Linux's).
func socketIO(c net.Conn) io.ReadWriter { return c }
