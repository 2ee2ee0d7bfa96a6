//go:build unix

package procs

import (
	"syscall"
	"time"
)

// processCPU is the user and system CPU time the process has used, as the
// kernel counts it (every thread, system calls included).
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
