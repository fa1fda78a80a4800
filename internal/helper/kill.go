package helper

import (
	"iter"
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
// while they are collected. Everything below pid dies before pid itself:
// pid is a reaper, the subreaper of what it started, and under gVisor a
// process that exits while its subreaper exits too finds no parent to be
// reparented to, which ends the whole sandbox (the sentry kills the PID
// namespace; Linux hands it to PID 1): pid is killed once the others are
// dead (gone, or zombies waiting for their parent), or after treeDeathWait.
// It returns once pid is dead too, or after deathWait more.
func killTree(pid int) {
	killed := map[int]bool{pid: true}
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for {
		found := false
		for _, p := range tree(pid) {
			if !killed[p] {
				killed[p], found = true, true
				_ = syscall.Kill(p, syscall.SIGSTOP)
			}
		}
		if !found {
			break
		}
	}
	delete(killed, pid)
	for p := range killed { // the group's members are among them (tree)
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	waitDead(killed, treeDeathWait)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // a member that escaped the list
	_ = syscall.Kill(pid, syscall.SIGKILL)
	waitDead(map[int]bool{pid: true}, deathWait)
}

// deathWait bounds how long killTree waits for pid to die once killed
// (SIGKILL is delivered asynchronously).
const deathWait = time.Second

// treeDeathWait bounds how long killTree waits for the processes below pid
// to die before it kills pid. Usually microseconds; under gVisor on two
// busy cores a second was not enough, and the sandbox ended (exit 137)
// right after a command's timeout.
const treeDeathWait = 10 * time.Second

// waitDead waits until every process of pids is gone or a zombie, at most d.
func waitDead(pids map[int]bool, d time.Duration) {
	deadline := time.Now().Add(d)
	for p := range pids {
		for !dead(p) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

// dead reports whether pid is gone or a zombie.
func dead(pid int) bool {
	st, ok := readStat(pid)
	return !ok || st.dead()
}

// tree lists the members of the process group pid and the processes below
// pid or below a member.
func tree(pid int) []int {
	children := map[int][]int{}
	queue := []int{pid}
	for p, st := range procs() {
		children[st.ppid] = append(children[st.ppid], p)
		if st.pgrp == pid && p != pid {
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

// procStat is what the helper needs of /proc/<pid>/stat (see proc(5)).
type procStat struct {
	state               byte // R, S, T, Z, X...
	ppid, pgrp, session int
	flags               uint64 // the kernel's PF_* flags
}

// dead reports a zombie or a process being reaped.
func (st procStat) dead() bool { return st.state == 'Z' || st.state == 'X' }

// readStat reads /proc/<pid>/stat; false when pid is gone.
func readStat(pid int) (procStat, bool) {
	var buf [4096]byte // a stat line is well under 1 KiB (its name at most 15 bytes)
	b, ok := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if !ok {
		return procStat{}, false
	}
	// The command name is in parentheses and may contain spaces: parse after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, false
	}
	st := procStat{state: f[0][0]}
	var errs [3]error
	st.ppid, errs[0] = strconv.Atoi(f[1])
	st.pgrp, errs[1] = strconv.Atoi(f[2])
	st.session, errs[2] = strconv.Atoi(f[3])
	if len(f) > 6 {
		st.flags, _ = strconv.ParseUint(f[6], 10, 64)
	}
	return st, errs == [3]error{}
}

// readProcFile reads the file at path, a small file of /proc, into buf
// with plain system calls (no poller: three calls, where os.ReadFile makes
// ten); false when it cannot be read or does not fit.
func readProcFile(path string, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if m == 0 {
			return buf[:n], true
		}
		n += m
	}
	return nil, false // longer than buf
}

// procs yields every process of the container with its stat.
func procs() iter.Seq2[int, procStat] {
	return func(yield func(int, procStat) bool) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if st, ok := readStat(pid); ok && !yield(pid, st) {
				return
			}
		}
	}
}

// ownSession makes the helper lead a session of its own, which the
// commands it runs share (an exec is usually one already), and returns its
// ID; 0 when it cannot.
func ownSession() int {
	pid := os.Getpid()
	if st, ok := readStat(pid); ok && st.session == pid {
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
	sid := req.Session
	for p, st := range procs() {
		if p != sid && st.session == sid && st.pgrp == p && !st.dead() {
			killTree(p)
		}
	}
	if st, ok := readStat(sid); ok && st.session == sid {
		_ = syscall.Kill(sid, syscall.SIGKILL)
	}
	return &proto.Result{}
}
