//go:build !linux

package testenv

import "os/exec"

// UnmountBelow is a no-op: nothing here mounts anything off Linux.
func UnmountBelow(dir string) error { return nil }

// killWithParent does nothing special here.
func killWithParent(cmd *exec.Cmd) {}
