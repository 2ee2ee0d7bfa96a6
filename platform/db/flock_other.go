//go:build !unix

package db

import (
	"context"
	"sync"
)

// fileLocks stands in for flock(2) where there is none: it serialises the
// starts of one process only. Several processes on one SQLite file need a
// Unix system (the supported deployment is Linux).
var fileLocks sync.Map

func lockFile(_ context.Context, path string, _ LockOptions) (func(), error) {
	mu, _ := fileLocks.LoadOrStore(path, &sync.Mutex{})
	m := mu.(*sync.Mutex)
	m.Lock()
	return m.Unlock, nil
}
