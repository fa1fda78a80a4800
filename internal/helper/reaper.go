package helper

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// reaper is a helper started in reap mode (see Reap), with the helper's
// end of its socket.
type reaper struct {
	cmd  *exec.Cmd
	conn *os.File // non-blocking: deadlines apply
}

// reaperAnswer bounds how long the helper waits for a reaper to take a
// command and say whether it started: a reaper that a command stopped
// (kill -STOP) must not hang the helper.
const reaperAnswer = 5 * time.Second

// selfExe names the running helper binary, which is started again in reap
// mode; it stays valid when the file is replaced or removed.
const selfExe = "/proc/self/exe"

// startReaper starts a reaper leading a new process group.
func startReaper() (*reaper, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reaper socket: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, fmt.Errorf("reaper socket: %w", err)
	}
	conn, theirs := os.NewFile(uintptr(fds[0]), "reaper"), os.NewFile(uintptr(fds[1]), "reaper")
	defer theirs.Close()
	cmd := exec.Command(selfExe, ReapMode)
	cmd.Args[0] = os.Args[0] // as ps shows it
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, err
	}
	return &reaper{cmd: cmd, conn: conn}, nil
}

// launch sends l and the command's stdin, stdout and stderr to the reaper
// and waits for its answer: nil when the command started, else the
// syscall.Errno of the failure or an error about the reaper.
func (r *reaper) launch(ctx context.Context, l launch, stdio [3]*os.File) error {
	body, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_ = r.conn.SetDeadline(time.Now().Add(reaperAnswer))
	stop := context.AfterFunc(ctx, func() { _ = r.conn.SetDeadline(time.Now()) })
	defer stop()
	defer r.conn.SetDeadline(time.Time{})

	hdr := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	rights := syscall.UnixRights(int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd()))
	rc, err := r.conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = syscall.Sendmsg(int(fd), hdr, rights, nil, syscall.MSG_NOSIGNAL)
		return serr != syscall.EAGAIN
	}); err != nil {
		return r.failed(ctx, err)
	}
	if serr != nil {
		return r.failed(ctx, serr)
	}
	if _, err := r.conn.Write(body); err != nil {
		return r.failed(ctx, err)
	}
	answer, err := r.readUint32()
	if err != nil {
		return r.failed(ctx, err)
	}
	if answer != 0 {
		return syscall.Errno(answer)
	}
	return nil
}

// failed describes a reaper that could not take its command.
func (r *reaper) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("the command's reaper did not answer within %v", reaperAnswer)
	}
	return fmt.Errorf("the command's reaper failed: %w", err)
}

// discard kills a reaper that did not take its command (or may have taken
// it without saying so: with what it started), and collects it.
func (r *reaper) discard() {
	killTree(r.cmd.Process.Pid)
	_ = r.cmd.Wait()
	r.conn.Close()
}

// status reads the shell's status that the reaper sends before it exits:
// false when it died without one (it was killed, or crashed).
func (r *reaper) status() (int, bool) {
	_ = r.conn.SetReadDeadline(time.Now().Add(time.Second))
	v, err := r.readUint32()
	return int(v), err == nil
}

func (r *reaper) readUint32() (uint32, error) {
	b := make([]byte, 4)
	if _, err := io.ReadFull(r.conn, b); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

// spare is the reaper started ahead of the next command, when the helper
// serves several (KeepSpareReaper): a command then costs no process start
// of its own.
var spare struct {
	sync.Mutex
	keep     bool
	r        *reaper
	starting bool
}

// KeepSpareReaper makes the helper keep a reaper started ahead of the next
// command, for a helper that serves many.
func KeepSpareReaper() {
	spare.Lock()
	spare.keep = true
	spare.Unlock()
	refillSpare()
}

// refillSpare starts a spare reaper in the background if one is wanted
// and none exists or is starting.
func refillSpare() {
	spare.Lock()
	defer spare.Unlock()
	if !spare.keep || spare.r != nil || spare.starting {
		return
	}
	spare.starting = true
	go func() {
		r, err := startReaper()
		spare.Lock()
		spare.starting = false
		if err == nil {
			spare.r = r
		}
		spare.Unlock()
	}()
}

// runReaped has a reaper run l: the spare one if it exists and is not
// stopped, else one started now (also when the spare fails). It returns
// the reaper, running the command, or why the command did not start (a
// syscall.Errno when the shell could not be started).
func runReaped(ctx context.Context, l launch, stdio [3]*os.File) (*reaper, error) {
	spare.Lock()
	r := spare.r
	spare.r = nil
	spare.Unlock()
	refillSpare()
	if r != nil {
		if st, ok := readStat(r.cmd.Process.Pid); ok && st.state != 'T' && st.state != 't' && !st.dead() {
			err := r.launch(ctx, l, stdio)
			if err == nil {
				return r, nil
			}
			var errno syscall.Errno
			if errors.As(err, &errno) || ctx.Err() != nil {
				r.discard()
				return nil, err
			}
		}
		r.discard()
	}
	r, err := startReaper()
	if err != nil {
		return nil, err
	}
	if err := r.launch(ctx, l, stdio); err != nil {
		r.discard()
		return nil, err
	}
	return r, nil
}

// mergeEnv returns base with extra's KEY=value pairs added, each replacing
// an earlier pair of the same key (a shell takes the first it finds).
func mergeEnv(base, extra []string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	at := map[string]int{}
	for _, kv := range append(append([]string(nil), base...), extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := at[k]; ok {
			out[i] = kv
			continue
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	return out
}
