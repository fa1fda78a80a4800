//go:build !linux

package docker

// hostHardLimit: the resource numbers of other systems are not Linux's,
// so a limit of this host says nothing of a Linux engine's.
func hostHardLimit(string) (int64, bool) { return 0, false }
