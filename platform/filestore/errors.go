package filestore

import (
	"context"
	"errors"
	"net/http"
	"syscall"

	"github.com/agritrade/api/platform/fault"
	"github.com/minio/minio-go/v7"
)

// IsUnavailable tells whether err from a blob store means the store is down,
// overloaded or out of space, so that the request may succeed later: for S3,
// a transport failure or an answer of 5xx, 429 or SlowDown/RequestTimeout; for
// the local directory, an I/O error, a full or read-only volume, or a network
// file system that went away. Misconfiguration (access denied, no such bucket)
// and defects are not: they stay 500, so that they are noticed.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var s3err minio.ErrorResponse
	if errors.As(err, &s3err) && (s3err.StatusCode != 0 || s3err.Code != "") {
		switch s3err.Code {
		case "SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError", "XMinioServerNotInitialized":
			return true
		}
		return s3err.StatusCode >= http.StatusInternalServerError || s3err.StatusCode == http.StatusTooManyRequests
	}
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EROFS, syscall.EDQUOT, syscall.ESTALE, syscall.ENOTCONN} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return fault.IsConnectionFailure(err)
}
