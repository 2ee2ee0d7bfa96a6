// Package fault holds the part of failure classification that every network
// dependency shares: whether an error is a transport failure (the connection
// could not be made, broke, or timed out). Each dependency's package builds
// its own IsUnavailable on it (db, filestore, cache), adding its driver's
// codes; the app hands those to the error middleware as apierr.Classifiers.
// It imports only the standard library, so any platform package may use it.
package fault

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// IsConnectionFailure tells whether err, anywhere in its chain, is a transport
// failure: refused, reset, aborted, broken pipe, unreachable host or network,
// a timeout or DNS failure (any net.Error), the peer closing the stream
// mid-conversation (EOF), or a deadline that passed while waiting for the peer.
// Callers apply it only to errors of their own dependency, never to a request
// body (a client that hangs up is not a dependency that is down).
func IsConnectionFailure(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ENETDOWN):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
