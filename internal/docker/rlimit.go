package docker

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// rlimitNames are the ulimit names Docker and Podman accept, indexed by
// the Linux resource number (generic numbering, as on amd64 and arm64);
// "" marks a resource they have no name for (9, RLIMIT_AS).
var rlimitNames = []string{
	"cpu", "fsize", "data", "stack", "core", "rss", "nproc", "nofile",
	"memlock", "", "locks", "sigpending", "msgqueue", "nice", "rtprio", "rttime",
}

// validUlimit reports whether the engines know the ulimit name.
func ValidUlimit(name string) bool { return name != "" && slices.Contains(rlimitNames, name) }

// How the OCI runtimes say a resource limit was refused at start: runc
// "error setting rlimit type 7: operation not permitted", crun
// "setrlimit `RLIMIT_NOFILE`: Operation not permitted".
var (
	runcRlimit = regexp.MustCompile(`rlimit type (\d+)`)
	crunRlimit = regexp.MustCompile("setrlimit .?RLIMIT_([A-Z]+)")
)

// refusedRlimit returns the name of the resource limit the runtime refused
// to set, as err (a failed start) says, or "".
func refusedRlimit(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if m := runcRlimit.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n >= 0 && n < len(rlimitNames) {
			return rlimitNames[n]
		}
	}
	if m := crunRlimit.FindStringSubmatch(msg); m != nil && ValidUlimit(strings.ToLower(m[1])) {
		return strings.ToLower(m[1])
	}
	return ""
}

// fallbackLimit is the limit New tries for nofile or nproc when this
// host's hard limit is refused too (the engine runs with lower limits than
// this process, as Podman's service may): low enough for any engine, high
// enough for a sandbox (CI's Podman configuration uses it for nproc).
const fallbackLimit = 16384

// adaptUlimits handles a start that failed because the runtime could not
// set a resource limit: an engine's default (Podman's nofile and nproc near
// 1048576) above what the engine's host allows. When the caller did not
// set that limit and it is nofile or nproc, it sets it in host to this
// host's hard limit, then (if that is refused too, and higher) to
// fallbackLimit, and
// reports true: New tries again. tries counts the limits it set per name.
// Otherwise it returns err saying what to change.
func adaptUlimits(host *container.HostConfig, tries map[string]int, err error) (bool, error) {
	name := refusedRlimit(err)
	if name == "" {
		return false, err
	}
	i := slices.IndexFunc(host.Resources.Ulimits, func(u *container.Ulimit) bool { return u != nil && u.Name == name })
	if i >= 0 && tries[name] == 0 {
		return false, fmt.Errorf("%w (the ulimit %s set for the sandbox is above what the engine's host allows: lower it)", err, name)
	}
	var ladder []int64
	if name == "nofile" || name == "nproc" {
		limit, ok := hostHardLimit(name)
		if ok && limit >= 0 && limit <= fallbackLimit {
			ladder = append(ladder, limit)
		} else {
			if ok {
				ladder = append(ladder, limit)
			}
			ladder = append(ladder, fallbackLimit)
		}
	}
	if tries[name] >= len(ladder) {
		return false, fmt.Errorf("%w (the engine's default ulimit %s is above what its host allows: set one with WithUlimits, or lower the engine's default, e.g. default_ulimits in Podman's containers.conf)", err, name)
	}
	u := &container.Ulimit{Name: name, Soft: ladder[tries[name]], Hard: ladder[tries[name]]}
	if i >= 0 {
		host.Resources.Ulimits[i] = u
	} else {
		host.Resources.Ulimits = append(host.Resources.Ulimits, u)
	}
	tries[name]++
	return true, nil
}

// ulimitNames returns the valid ulimit names, sorted.
func UlimitNames() []string {
	names := slices.DeleteFunc(slices.Clone(rlimitNames), func(n string) bool { return n == "" })
	slices.Sort(names)
	return names
}
