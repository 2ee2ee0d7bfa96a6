//go:build unix

package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile holds an exclusive flock(2) on path until the returned release:
// the kernel drops it when the process ends, however it ends. flock locks
// belong to the open file, so two opens in one process exclude each other too.
func lockFile(ctx context.Context, path string, o LockOptions) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("take the migration lock: %w", err)
	}
	try := func() (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
			return false, nil
		}
		return err == nil, err
	}
	holder := func() string { return "a process holding " + path }
	if err := waitFor(ctx, o, try, holder); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
