//go:build !linux

package filestore

import (
	"errors"
	"os"
)

// startWriteback syncs f where there is no way to start the write-back of a
// range alone: the final Sync then has only what came after to flush.
func startWriteback(f *os.File, _, _ int64) error { return f.Sync() }

// readBack is never called here: setDirect always fails.
func readBack(f, _ *os.File, _, _ int64) error { return f.Sync() }

// setDirect: direct I/O through F_SETFL is Linux's; uploads are written
// through the page cache elsewhere.
func setDirect(*os.File, bool) error { return errors.ErrUnsupported }
