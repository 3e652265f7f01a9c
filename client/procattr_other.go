//go:build !linux

package client

import "os/exec"

// setParentDeathSignal does nothing where there is no parent-death signal:
// a test binary killed outright leaves its daemon running.
func setParentDeathSignal(*exec.Cmd) {}
