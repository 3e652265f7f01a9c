package client

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes a daemon Main starts get SIGTERM when the test
// binary dies, however it dies, so that it stops its servers.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
