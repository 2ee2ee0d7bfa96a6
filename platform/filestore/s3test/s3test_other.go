//go:build !linux

package s3test

import "os/exec"

// dieWithParent has no portable equivalent: Stop ends the server.
func dieWithParent(*exec.Cmd) {}
