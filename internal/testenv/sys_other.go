//go:build !linux

package testenv

import "os/exec"

// unmountBelow is a no-op: debootstrap only runs on Linux.
func unmountBelow(dir string) error { return nil }

// killWithParent does nothing special here.
func killWithParent(cmd *exec.Cmd) {}
