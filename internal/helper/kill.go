package helper

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// killTree kills the process group led by pid and every process descending
// from pid or from a member of its group, including those that left the
// group with setsid or setpgid. It stops them all first, so that none can
// fork or, by exiting, hand its children to PID 1 (which would hide them)
// while they are collected. It returns once they are all dead (gone, or
// zombies waiting for their parent), or after deathWait.
func killTree(pid int) {
	procs := map[int]bool{pid: true}
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for {
		found := false
		for _, p := range tree(pid) {
			if !procs[p] {
				procs[p], found = true, true
				_ = syscall.Kill(p, syscall.SIGSTOP)
			}
		}
		if !found {
			break
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for p := range procs {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	waitDead(procs, deathWait)
}

// deathWait bounds how long killTree waits for the processes it killed to
// die (SIGKILL is delivered asynchronously).
const deathWait = time.Second

// waitDead waits until every process of procs is gone or a zombie, at most d.
func waitDead(procs map[int]bool, d time.Duration) {
	deadline := time.Now().Add(d)
	for p := range procs {
		for !dead(p) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

// dead reports whether pid is gone or a zombie.
func dead(pid int) bool {
	f := statFields(pid)
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// tree lists the members of the process group pid and the processes below
// pid or below a member, read from /proc.
func tree(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	queue := []int{pid}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := statFields(p)
		if len(f) < 3 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
		if pg, err := strconv.Atoi(f[2]); err == nil && pg == pid && p != pid {
			queue = append(queue, p)
		}
	}
	out := append([]int(nil), queue[1:]...)
	seen := map[int]bool{}
	for _, p := range queue {
		seen[p] = true
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// startTime reads the start time of pid (in clock ticks since boot) from
// /proc/<pid>/stat: with the pid, it names one process for good.
func startTime(pid int) (uint64, bool) {
	f := statFields(pid)
	if len(f) < 20 {
		return 0, false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return st, err == nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name,
// the first being the state (field 3 in proc(5)).
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// The command name is in parentheses and may contain spaces: parse after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// killRequest kills the process tree of req.Pid, if that process is still
// the one that started at req.Start rather than a later one with its pid.
// A process that is gone is no error: the request is that it not run.
func killRequest(req proto.Request) *proto.Result {
	if st, ok := startTime(req.Pid); ok && st == req.Start {
		killTree(req.Pid)
	}
	return &proto.Result{}
}
