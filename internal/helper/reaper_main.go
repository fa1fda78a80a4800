package helper

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// ReaperMode is the argument (after the program name) that runs the helper
// as a command's reaper: see RunReaper.
const ReaperMode = "reap"

// reapFD is the reaper's end of its socket to the helper.
const reapFD = 3

// prSetChildSubreaper is prctl(2)'s PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// launch is what the helper sends a reaper: the command to run. The
// command's stdin, stdout and stderr travel with it (SCM_RIGHTS).
type launch struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`
	TTY  bool     `json:"tty,omitempty"` // stdin is a terminal, to be the controlling one
	// script, sent after stdin, stdout and stderr, is the shell's
	// fd 3: a long command (see shellLaunch); Script says it comes.
	script *os.File
	Script bool `json:"script,omitempty"`
}

// survived lists the signals that would end or stop the reaper by default
// and that it catches instead: a command that signals its whole process
// group (kill 0, kill -TERM -$$) hits its reaper too, and must not take the
// attribution of its detached processes down with it. The shell it runs
// gets the default disposition back at exec (the Go runtime resets the
// signals it handles).
var survived = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTERM, syscall.SIGTSTP, syscall.SIGTTIN,
	syscall.SIGTTOU, syscall.SIGVTALRM, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGIO,
	syscall.SIGPWR, syscall.SIGSTKFLT,
}

// RunReaper is the helper's reap mode: a child subreaper that runExec puts
// between itself and each command's shell, leading the command's process
// group. Every process the command starts stays its descendant however it
// detaches (a background child whose parent exited, a new session, a new
// process group), because the kernel hands orphans to the nearest
// subreaper instead of PID 1, so killTree finds them all on timeout or
// cancel.
//
// RunReaper waits on its socket (fd 3) for a launch, starts it and answers 0 or
// the errno of the failure, collects the orphans that exit meanwhile, and
// once the shell exits, sends its status (128+n when signal n killed it)
// and whether it has no child left. Then it waits for the next launch (the
// helper reuses a reaper that nothing is left under, and keeps one ready
// ahead of the next command), or, when a process of the command still runs,
// exits: the background processes of a command that ended on its own keep
// running, as they would without a reaper (they go to PID 1). It exits
// when the helper closes the socket. The helper takes a reaper that exits
// without a status for a command that turned on it, and kills the
// command's processes.
func RunReaper() int {
	runtime.GOMAXPROCS(1)
	// Threads in reserve, as the helper keeps: a fork bomb must not
	// crash the reaper when the runtime needs a thread.
	reserveThreads(2)
	signal.Notify(make(chan os.Signal, 1), survived...)
	syscall.CloseOnExec(reapFD)
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return 127
	}
	for {
		l, stdio, err := receiveLaunch(reapFD)
		if err != nil {
			return 0 // the helper is done with this reaper
		}
		status, clean, started := reapOne(l, stdio)
		if !started {
			continue // the helper has the errno
		}
		if clean {
			sendUint32(reapFD, uint32(status), 1)
			continue
		}
		sendUint32(reapFD, uint32(status), 0)
		return status
	}
}

// reapOne runs one launch and answers the helper; it returns the shell's
// status, whether no child is left, and whether the shell started.
func reapOne(l launch, stdio []uintptr) (status int, clean, started bool) {
	pid, err := syscall.ForkExec(l.Argv[0], l.Argv, &syscall.ProcAttr{Dir: l.Dir, Env: l.Env, Files: stdio, Sys: ttyAttr(l.TTY)})
	for _, fd := range stdio {
		_ = syscall.Close(int(fd))
	}
	if err != nil {
		errno, _ := err.(syscall.Errno)
		sendUint32(reapFD, uint32(max(errno, 1)))
		return 127, true, false
	}
	sendUint32(reapFD, 0)
	status = 127
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil { // ECHILD: cannot be, the shell is a child until reaped
			return status, false, true
		}
		if p == pid {
			status = ws.ExitStatus()
			if ws.Signaled() {
				status = 128 + int(ws.Signal())
			}
			break
		}
	}
	for { // collect what has exited; ECHILD says nothing is left
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
		case err == syscall.ECHILD:
			return status, true, true
		case err != nil || p == 0:
			return status, false, true
		}
	}
}

// receiveLaunch reads a launch and the three files that come with it from
// the socket fd: a length, then the JSON body.
func receiveLaunch(fd int) (launch, []uintptr, error) {
	var l launch
	hdr := make([]byte, 4)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := syscall.Recvmsg(fd, hdr, oob, syscall.MSG_CMSG_CLOEXEC)
	if err != nil {
		return l, nil, err
	}
	var stdio []uintptr
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			fds, _ := syscall.ParseUnixRights(&m)
			for _, f := range fds {
				stdio = append(stdio, uintptr(f))
			}
		}
	}
	if err := readFull(fd, hdr[n:]); err != nil {
		return l, stdio, err
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr))
	if err := readFull(fd, body); err != nil {
		return l, stdio, err
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return l, stdio, err
	}
	if want := 3 + btoi(l.Script); len(l.Argv) == 0 || len(stdio) != want {
		return l, stdio, syscall.EINVAL
	}
	return l, stdio, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rights is the SCM_RIGHTS message of stdio and l's script file.
func (l launch) rights(stdio [3]*os.File) []byte {
	fds := []int{int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())}
	if l.script != nil {
		fds = append(fds, int(l.script.Fd()))
	}
	return syscall.UnixRights(fds...)
}

// readFull fills b from fd.
func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Read(fd, b)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return err
		case n == 0:
			return io.ErrUnexpectedEOF
		default:
			b = b[n:]
		}
	}
	return nil
}

// sendUint32 writes vs to the socket fd in one write, ignoring failures: a
// helper that went away reads nothing.
func sendUint32(fd int, vs ...uint32) {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	_, _ = syscall.Write(fd, b)
}
