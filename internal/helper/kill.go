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

// ownSession makes the helper lead a session of its own, which the
// commands it runs share (an exec is usually one already), and returns its
// ID; 0 when it cannot.
func ownSession() int {
	pid := os.Getpid()
	if f := statFields(pid); len(f) > 3 && f[3] == strconv.Itoa(pid) {
		return pid
	}
	if sid, err := syscall.Setsid(); err == nil {
		return sid
	}
	return 0
}

// killRequest kills what runs for the helper leading req.Session, which
// died or stopped answering: each command it started, with its tree (a
// process group in that session whose leader, the command's shell, is
// alive), then that helper itself. Background processes of commands that
// already finished (groups whose leader is gone) are left alone, as they
// would have been. A session that is gone is no error.
//
// No other session can have taken the ID meanwhile: the kernel does not
// reuse a pid while it names a session with members.
func killRequest(req proto.Request) *proto.Result {
	sid := strconv.Itoa(req.Session)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == req.Session {
			continue
		}
		if f := statFields(pid); len(f) > 3 && f[3] == sid && f[2] == e.Name() && !dead(pid) {
			killTree(pid)
		}
	}
	if f := statFields(req.Session); len(f) > 3 && f[3] == sid {
		_ = syscall.Kill(req.Session, syscall.SIGKILL)
	}
	return &proto.Result{}
}
