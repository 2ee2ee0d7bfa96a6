//go:build !unix

package procs

import (
	"errors"
	"time"
)

// processCPU has no implementation here: the governor then leaves GOMAXPROCS
// to the runtime.
func processCPU() (time.Duration, error) {
	return 0, errors.New("procs: no process CPU clock on this system")
}
