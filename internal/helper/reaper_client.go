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
	"sync/atomic"
	"syscall"
	"time"
)

// reaper is a helper started in reaper mode (see RunReaper), with the helper's
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
	cmd := exec.Command(selfExe, ReaperMode)
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
// and waits for its answer: nil when the command started, else a
// *startErrno or an error about the reaper.
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
	rights := l.rights(stdio)
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
		return &startErrno{syscall.Errno(answer)}
	}
	return nil
}

// startErrno is why a reaper could not start a command's shell: the
// reaper is fine, the command is not. A failure of the reaper itself can
// carry an errno too (ECONNRESET when it died), which this type tells
// apart.
type startErrno struct{ errno syscall.Errno }

func (e *startErrno) Error() string { return e.errno.Error() }
func (e *startErrno) Unwrap() error { return e.errno }

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

// discard kills a reaper that failed (with what it may have started
// without saying so), and collects it.
func (r *reaper) discard() {
	killTree(r.cmd.Process.Pid)
	_ = r.cmd.Wait()
	r.conn.Close()
}

// outcome is what a reaper says when its shell exits: the status, and
// whether nothing of the command is left (the reaper is then reusable);
// err when it died without saying (it was killed, or crashed).
type outcome struct {
	status int
	clean  bool
	err    error
}

// wait waits for the reaper's outcome (no deadline: the command runs as
// long as it runs; a kill of the reaper ends the wait).
func (r *reaper) wait() outcome {
	status, err := r.readUint32()
	if err != nil {
		return outcome{err: err}
	}
	clean, err := r.readUint32()
	return outcome{status: int(status), clean: clean == 1, err: err}
}

// close ends a reaper that is not needed: it exits when its socket closes.
func (r *reaper) close() {
	r.conn.Close()
	go func() { _ = r.cmd.Wait() }()
}

func (r *reaper) readUint32() (uint32, error) {
	b := make([]byte, 4)
	if _, err := io.ReadFull(r.conn, b); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

// idle holds the reapers that wait for a command: one a command left
// nothing under, or one started ahead (KeepSpareReaper), so that a command
// usually costs no process start of its own.
var idle struct {
	sync.Mutex
	keep     bool // keep reapers for later commands (a helper that serves many)
	reapers  []*reaper
	starting bool
}

// maxIdle bounds the idle reapers a helper keeps (each is a process).
const maxIdle = 2

// KeepSpareReaper makes the helper keep reapers for later commands, and
// one started ahead of the first: for a helper that serves many.
func KeepSpareReaper() {
	idle.Lock()
	idle.keep = true
	idle.starting = true
	idle.Unlock()
	go func() {
		r, err := startReaper()
		idle.Lock()
		idle.starting = false
		idle.Unlock()
		if err == nil {
			release(r)
		}
	}()
}

// release keeps r for a later command if wanted, else ends it.
func release(r *reaper) {
	idle.Lock()
	if idle.keep && len(idle.reapers) < maxIdle {
		idle.reapers = append(idle.reapers, r)
		r = nil
	}
	idle.Unlock()
	if r != nil {
		r.close()
	}
}

// takeIdle returns an idle reaper, or nil.
func takeIdle() *reaper {
	idle.Lock()
	defer idle.Unlock()
	n := len(idle.reapers)
	if n == 0 {
		return nil
	}
	r := idle.reapers[n-1]
	idle.reapers = idle.reapers[:n-1]
	return r
}

// forkRetry bounds how long a command's start waits for room under the
// sandbox's pids limit (fork fails with EAGAIN), as a shell retries a
// fork, while no other start succeeds: a burst of commands past the limit
// (every command costs a reaper's threads and its shell) starts as earlier
// ones end, while a start in a sandbox that a fork bomb fills fails.
const forkRetry = 3 * time.Second

// forkQueue lets one refused start retry at a time: a hundred retrying at
// once would each take part of the room (a new reaper's runtime needs
// several threads) and none would get all it needs.
var forkQueue = make(chan struct{}, 1)

// lastStart is when a start last succeeded (UnixNano), 0 before the first.
var lastStart atomic.Int64

// retryable reports whether a start failed for want of room.
func retryable(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, errReaperExited)
}

// retryFork calls start; when the pids limit refuses it (retryable), it
// retries, one caller at a time (forkQueue), backing off, until start
// succeeds or fails otherwise, ctx ends, or forkRetry passes without any
// start succeeding.
func retryFork[T any](ctx context.Context, start func() (T, error)) (T, error) {
	v, err := start()
	if !retryable(err) {
		if err == nil {
			lastStart.Store(time.Now().UnixNano())
		}
		return v, err
	}
	first := time.Now().UnixNano()
	giveUp := func() time.Duration {
		return time.Duration(max(first, lastStart.Load()) + int64(forkRetry) - time.Now().UnixNano())
	}
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for queued := false; !queued; {
		left := giveUp()
		if left <= 0 {
			return v, noRoom(err)
		}
		t := time.NewTimer(min(left, 50*time.Millisecond))
		select {
		case forkQueue <- struct{}{}:
			queued = true
		case <-ctx.Done():
			t.Stop()
			return v, noRoom(err)
		case <-t.C:
		}
		t.Stop()
	}
	defer func() { <-forkQueue }()
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		v, err = start()
		if !retryable(err) {
			if err == nil {
				lastStart.Store(time.Now().UnixNano())
			}
			return v, err
		}
		if giveUp() < delay || !sleep(delay) {
			return v, noRoom(err)
		}
	}
}

// noRoom explains a start the pids limit kept refusing.
func noRoom(err error) error {
	return fmt.Errorf("no room for a new process under the sandbox's process limit (pids): %w", err)
}

// runReaped has a reaper run l: an idle one if it is neither stopped nor
// gone, else one started now (also when the idle one fails). It returns
// the reaper, running the command, or why the command did not start (a
// *startErrno when the shell could not be started). A start the pids
// limit refuses is retried (retryFork).
func runReaped(ctx context.Context, l launch, stdio [3]*os.File) (*reaper, error) {
	return retryFork(ctx, func() (*reaper, error) { return runReapedOnce(ctx, l, stdio) })
}

// runReapedOnce is one attempt of runReaped.
func runReapedOnce(ctx context.Context, l launch, stdio [3]*os.File) (*reaper, error) {
	for r := takeIdle(); r != nil; r = takeIdle() {
		if st, ok := readStat(r.cmd.Process.Pid); ok && st.state != 'T' && st.state != 't' && !st.dead() {
			err := r.launch(ctx, l, stdio)
			if err == nil {
				return r, nil
			}
			var se *startErrno
			if errors.As(err, &se) {
				release(r) // the reaper is fine, the command is not
				return nil, err
			}
			if ctx.Err() != nil {
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
		var se *startErrno
		if errors.As(err, &se) {
			release(r)
			return nil, err
		}
		r.discard()
		if st := r.cmd.ProcessState; ctx.Err() == nil && st != nil && st.Exited() {
			// It ended of its own before it took the command: the Go
			// runtime of a new reaper dies when the pids limit refuses
			// it a thread.
			err = fmt.Errorf("%w (%v): %w", errReaperExited, st, err)
		}
		return nil, err
	}
	return r, nil
}

// errReaperExited says that a reaper started for a command exited before
// it took it; runReaped retries that as it retries EAGAIN.
var errReaperExited = errors.New("the command's new reaper exited")

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
