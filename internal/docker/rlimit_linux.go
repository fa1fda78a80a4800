package docker

import (
	"slices"
	"syscall"
)

// hostHardLimit returns this process's hard limit of the named resource,
// -1 for unlimited: a limit the engine's host allows when the engine runs
// on this host.
func hostHardLimit(name string) (int64, bool) {
	n := slices.Index(rlimitNames, name)
	if n < 0 {
		return 0, false
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(n, &rl); err != nil {
		return 0, false
	}
	if rl.Max == ^uint64(0) || rl.Max > 1<<62 {
		return -1, true
	}
	return int64(rl.Max), true
}
