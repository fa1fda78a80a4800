package sandbox

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
func validUlimit(name string) bool { return name != "" && slices.Contains(rlimitNames, name) }

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
	if m := crunRlimit.FindStringSubmatch(msg); m != nil && validUlimit(strings.ToLower(m[1])) {
		return strings.ToLower(m[1])
	}
	return ""
}

// maxRlimitRetries bounds how often New creates the container again with
// an engine's default limit replaced by this host's (nofile, then nproc).
const maxRlimitRetries = 2

// adaptUlimits handles a start that failed because the runtime could not
// set a resource limit: an engine's default (Podman's nofile and nproc near
// 1048576) above what the host allows. When the caller did not set that
// limit, it sets it in host to this host's hard limit and reports true: New
// tries again. Otherwise it returns err saying what to change.
func adaptUlimits(host *container.HostConfig, added map[string]bool, err error) (bool, error) {
	name := refusedRlimit(err)
	if name == "" {
		return false, err
	}
	set := slices.ContainsFunc(host.Resources.Ulimits, func(u *container.Ulimit) bool { return u != nil && u.Name == name })
	if set && !added[name] {
		return false, fmt.Errorf("%w (the ulimit %s set for the sandbox is above what the engine's host allows: lower it)", err, name)
	}
	limit, ok := hostHardLimit(name)
	if set || !ok || len(added) >= maxRlimitRetries {
		return false, fmt.Errorf("%w (the engine's default ulimit %s is above what its host allows: set one with WithUlimits, or lower the engine's default, e.g. default_ulimits in Podman's containers.conf)", err, name)
	}
	host.Resources.Ulimits = append(host.Resources.Ulimits, &container.Ulimit{Name: name, Soft: limit, Hard: limit})
	added[name] = true
	return true, nil
}

// ulimitNames returns the valid ulimit names, sorted.
func ulimitNames() []string {
	names := slices.DeleteFunc(slices.Clone(rlimitNames), func(n string) bool { return n == "" })
	slices.Sort(names)
	return names
}
