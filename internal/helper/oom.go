package helper

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// oomKills returns how many processes the kernel's OOM killer has killed in
// the container's memory cgroup (v2 memory.events, v1 memory.oom_control),
// or -1 when it cannot tell.
func oomKills() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		if n, ok := readCounter(f, "oom_kill"); ok {
			return n
		}
	}
	return -1
}

func readCounter(file, key string) (int64, bool) {
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
