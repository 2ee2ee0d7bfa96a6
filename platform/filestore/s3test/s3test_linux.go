package s3test

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills the server when the test binary dies without Stop
// (a panic, a timeout), so that no MinIO outlives its tests.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
