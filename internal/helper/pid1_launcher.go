package helper

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LauncherMode is the argument (after the program name) that runs the
// helper as a launcher of managed processes: see RunLauncher.
const LauncherMode = "procexec"

// launchFD is a launcher's end of its socket to PID 1.
const launchFD = 3

// RunLauncher is a launcher: PID 1 keeps one started ahead, in a session of
// its own, so that starting a process costs no process start. It makes
// itself a child subreaper, waits on its socket (fd 3) for a launch and
// its stdin, stdout and stderr (as a reaper does, see receiveLaunch),
// takes them as its own, the terminal as its controlling one for a TTY
// launch, and replaces itself with the command. The subreaper setting
// survives execve: the command's shell collects its orphans, so everything
// it starts stays its descendant however it detaches (setsid, double
// fork) while it runs, and a tree kill finds it. PID 1 does not wait for
// the exec: a failure (a directory it may not enter, a missing shell) ends
// the process with status 127 and the reason in its output, as a shell's
// would.
func RunLauncher() int {
	syscall.CloseOnExec(launchFD) // its closing on exec says the command runs
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return 127
	}
	l, stdio, err := receiveLaunch(launchFD)
	if err != nil {
		return 127 // PID 1 is done with this launcher
	}
	if err := takeLaunch(l, stdio); err != nil {
		// Into the process's log, when stderr is its already.
		fmt.Fprintf(os.Stderr, "sandbox-helper: %v\n", err)
		return 127
	}
	return 127 // not reached
}

// takeLaunch sets the process up for l and execs it; it returns only on
// failure.
func takeLaunch(l launch, stdio []uintptr) error {
	if len(stdio) > launchFD {
		// The script goes where the socket is: keep the socket open
		// elsewhere until the exec closes it.
		if _, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, launchFD, syscall.F_DUPFD_CLOEXEC, 10); errno != 0 {
			return errno
		}
	}
	for i, fd := range stdio {
		if err := syscall.Dup3(int(fd), i, 0); err != nil {
			return err
		}
	}
	if l.TTY {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_IOCTL, 0, syscall.TIOCSCTTY, 0); errno != 0 {
			return errno
		}
	}
	if l.Dir != "" {
		if err := syscall.Chdir(l.Dir); err != nil {
			return err
		}
	}
	return syscall.Exec(l.Argv[0], l.Argv, l.Env)
}

// launcher is a launcher started ahead, with PID 1's end of its socket
// and its entry in the table (registered at its start, so that its exit is
// never missed).
type launcher struct {
	conn *os.File // non-blocking: deadlines apply
	p    *proc
	// The stdio of a process without a terminal, made with the launcher
	// (nil if that failed): PID 1's ends and the child's.
	stdin, out *os.File
	child      [3]*os.File
}

// makePipes makes l's stdio pipes.
func (l *launcher) makePipes() error {
	inW, inR, err := childPipe(true)
	if err != nil {
		return err
	}
	outR, outW, err := childPipe(false)
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	l.stdin, l.out, l.child = inW, outR, [3]*os.File{inR, outW, outW}
	return nil
}

// takePipes returns l's stdio pipes, made ahead or now.
func (l *launcher) takePipes() (stdin, out *os.File, child [3]*os.File, err error) {
	if l.stdin == nil {
		if err := l.makePipes(); err != nil {
			return nil, nil, child, err
		}
	}
	stdin, out, child = l.stdin, l.out, l.child
	l.stdin, l.out, l.child = nil, nil, [3]*os.File{}
	return stdin, out, child, nil
}

// dropPipes closes l's stdio pipes made ahead, if any.
func (l *launcher) dropPipes() {
	if l.stdin == nil {
		return
	}
	l.stdin.Close()
	l.out.Close()
	closeAll(&l.child)
	l.stdin, l.out = nil, nil
}

// launcherAnswer bounds how long PID 1 waits for a launcher to take a
// command: one that a sandbox command stopped (its socket full) must not
// hang the table.
const launcherAnswer = 5 * time.Second

// startLauncher starts a launcher in a session of its own and registers
// it in t. Call without t.mu.
func (t *procTable) startLauncher() (*launcher, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("launcher socket: %w", err)
	}
	defer syscall.Close(fds[1])
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		return nil, fmt.Errorf("launcher socket: %w", err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	defer null.Close()
	n := null.Fd()
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{n, n, n, uintptr(fds[1])}, Sys: &syscall.SysProcAttr{Setsid: true}}
	p := &proc{changed: make(chan struct{})}
	t.mu.Lock()
	pid, err := syscall.ForkExec(selfExe, []string{os.Args[0], LauncherMode}, attr)
	if err == nil {
		p.pid = pid
		t.byPid[pid] = p // its exit is recorded even before it is used
	}
	t.mu.Unlock()
	if err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	l := &launcher{conn: os.NewFile(uintptr(fds[0]), "launcher"), p: p}
	_ = l.makePipes() // else takePipes makes them, and says why not
	return l, nil
}

// discard kills and forgets a launcher that failed.
func (l *launcher) discard() {
	_ = syscall.Kill(l.p.pid, syscall.SIGKILL)
	l.conn.Close()
	l.dropPipes()
}

// launch hands ll and its stdio to l, without waiting for the exec (see
// RunLauncher): an error says that the launcher did not take it.
func (l *launcher) launch(ctx context.Context, ll launch, stdio [3]*os.File) error {
	defer l.conn.Close()
	body, err := json.Marshal(ll)
	if err != nil {
		return err
	}
	_ = l.conn.SetDeadline(time.Now().Add(launcherAnswer))
	stop := context.AfterFunc(ctx, func() { _ = l.conn.SetDeadline(time.Now()) })
	defer stop()
	hdr := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	rights := ll.rights(stdio)
	rc, err := l.conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = syscall.Sendmsg(int(fd), hdr, rights, nil, syscall.MSG_NOSIGNAL)
		return serr != syscall.EAGAIN
	}); err != nil {
		return fmt.Errorf("the process launcher failed: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("the process launcher failed: %w", serr)
	}
	if _, err := l.conn.Write(body); err != nil {
		return fmt.Errorf("the process launcher failed: %w", err)
	}
	return nil
}

// spareLaunchers is how many launchers PID 1 keeps started ahead, once a
// process was started: starts in a row then rarely wait for one (each is
// a small idle process).
const spareLaunchers = 2

// spareDelay is how long after a start PID 1 starts the next launcher.
const spareDelay = 25 * time.Millisecond

// takeLauncher returns a launcher started ahead, if one is alive, or a new
// one; and starts the next ones in the background.
func (t *procTable) takeLauncher() (*launcher, error) {
	// Later, not now: starting a launcher takes CPU that the answer to
	// this start needs on a busy machine.
	defer time.AfterFunc(spareDelay, t.keepSpare)
	for {
		t.mu.Lock()
		n := len(t.spares)
		if n == 0 {
			t.mu.Unlock()
			return t.startLauncher()
		}
		l := t.spares[n-1]
		t.spares = t.spares[:n-1]
		exited := l.p.exited
		t.mu.Unlock()
		if !exited {
			if st, ok := readStat(l.p.pid); ok && st.state != 'T' && st.state != 't' && !st.dead() && !dying(l.p.pid, st) {
				return l, nil
			}
		}
		l.discard()
	}
}

// keepSpare starts launchers ahead of the next starts, up to
// spareLaunchers, unless that runs already.
func (t *procTable) keepSpare() {
	t.mu.Lock()
	if t.spareStarting {
		t.mu.Unlock()
		return
	}
	t.spareStarting = true
	t.mu.Unlock()
	for {
		t.mu.Lock()
		if len(t.spares) >= spareLaunchers {
			t.spareStarting = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		l, err := t.startLauncher()
		t.mu.Lock()
		if err != nil {
			t.spareStarting = false
			t.mu.Unlock()
			return
		}
		t.spares = append(t.spares, l)
		t.mu.Unlock()
	}
}

// pfExiting is the kernel's PF_EXITING flag in /proc/PID/stat.
const pfExiting = 0x4

// dying reports whether pid was killed a moment ago and is not a zombie
// yet: a SIGKILL pending, or the process exiting. A launcher in that state
// would take a command and die with it (exit 137). st is pid's stat, read
// by the caller (zero when it could not be).
func dying(pid int, st procStat) bool {
	if st.flags&pfExiting != 0 {
		return true
	}
	var buf [8192]byte
	b, ok := readProcFile("/proc/"+strconv.Itoa(pid)+"/status", buf[:])
	if !ok {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "SigPnd" && k != "ShdPnd" {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
			return true
		}
	}
	return false
}
