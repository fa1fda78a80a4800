package helper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"unsafe"
)

// ptmx is the pseudo-terminal multiplexer a PTY pair is opened from.
const ptmx = "/dev/ptmx"

// ErrNoPTY reports that the container cannot give a pseudo-terminal: no
// /dev/ptmx, no devpts mounted on /dev/pts, or no permission to open them.
var ErrNoPTY = errors.New("no pseudo-terminal in the sandbox")

// OpenPTY opens a new pseudo-terminal pair without cgo: the master (the
// side the helper reads and writes, pollable, so read deadlines apply) and
// the slave (the terminal a command gets as stdin, stdout and stderr). The
// caller closes both. Its errors wrap ErrNoPTY and the cause.
//
// Do not call Fd on the master: it would make the file blocking and stop
// deadlines; use SetWinsize, which does not.
func OpenPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile(ptmx, os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoPTY, err)
	}
	fail := func(what string, err error) (*os.File, *os.File, error) {
		master.Close()
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrNoPTY, what, err)
	}
	var n uint32
	unlock := int32(0)
	if err := ioctlFile(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		return fail("unlock", err)
	}
	if err := ioctlFile(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		return fail("number", err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	slave, err = os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail("open", err)
	}
	return master, slave, nil
}

// winsize is the kernel's struct winsize.
type winsize struct {
	Rows, Cols, X, Y uint16
}

// SetWinsize sets the size of the terminal f (either side of a pair) in
// rows and columns; the terminal's foreground process group gets SIGWINCH
// when it changes.
func SetWinsize(f *os.File, rows, cols uint16) error {
	ws := winsize{Rows: rows, Cols: cols}
	if err := ioctlFile(f, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	return nil
}

// GetWinsize returns the size of the terminal f in rows and columns.
func GetWinsize(f *os.File) (rows, cols uint16, err error) {
	var ws winsize
	if err := ioctlFile(f, syscall.TIOCGWINSZ, unsafe.Pointer(&ws)); err != nil {
		return 0, 0, fmt.Errorf("get terminal size: %w", err)
	}
	return ws.Rows, ws.Cols, nil
}

// StartOnPTY starts cmd with the terminal slave as its stdin, stdout and
// stderr (where those are unset) and as its controlling terminal, in a new
// session (so that Ctrl-C typed on the master signals its foreground
// process group). The caller may close its slave once cmd started.
func StartOnPTY(cmd *exec.Cmd, slave *os.File) error {
	if cmd.Stdin == nil {
		cmd.Stdin = slave
	}
	if cmd.Stdout == nil {
		cmd.Stdout = slave
	}
	if cmd.Stderr == nil {
		cmd.Stderr = slave
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Setpgid = false // a session leader leads its own group
	cmd.SysProcAttr.Ctty = ttyChildFD(cmd, slave)
	return cmd.Start()
}

// ttyChildFD is the descriptor number the slave has in cmd's child.
func ttyChildFD(cmd *exec.Cmd, slave *os.File) int {
	switch {
	case cmd.Stdin == slave:
		return 0
	case cmd.Stdout == slave:
		return 1
	case cmd.Stderr == slave:
		return 2
	}
	for i, f := range cmd.ExtraFiles {
		if f == slave {
			return 3 + i
		}
	}
	return 0
}

// ioctlFile runs ioctl req on f's descriptor without making f blocking
// (as Fd would).
func ioctlFile(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
