package helper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// procTable is PID 1's table of managed processes (see StartProcess in the
// library): PID 1 starts them, owns their output logs and stdin, and
// collects their exit status, so they outlive every helper connection.
type procTable struct {
	mu    sync.Mutex
	byID  map[string]*proc
	byPid map[int]*proc // launchers too, from their start
	order []*proc       // oldest first
	// spares are launchers started ahead (pid1_launcher.go).
	spares        []*launcher
	spareStarting bool
	// launches are the launches of answered starts that wait for the
	// serving helper's word (pid1_mux.go), by process ID.
	launches map[string]*pendingLaunch
	startMu  sync.Mutex // one start at a time: the table's room is checked, then taken
}

// proc is one managed process.
type proc struct {
	id, command string
	pid         int
	tty         bool
	started     time.Time

	// Guarded by the table's mu:
	log         procLog
	exited      bool
	code, sig   int
	ended       time.Time
	outEnded    bool          // the output reader saw the end
	graceOver   bool          // exited a while ago: output still open is not waited for
	changed     chan struct{} // closed and replaced on every change
	stdinClosed bool
	// launchFailed: the launcher did not take the command (its exit is
	// then status 127).
	launchFailed bool

	stdin   *os.File // pipe's write end, or the terminal's master
	master  *os.File // the terminal's master (ProcessTTY), else nil
	writeMu sync.Mutex
}

// outputGrace is how long, after a process exited, its output counts as
// still coming while something it started keeps the output open.
const outputGrace = 100 * time.Millisecond

// procTab is PID 1's table; nil in any other helper.
var procTab *procTable

func newProcTable() *procTable {
	return &procTable{byID: map[string]*proc{}, byPid: map[int]*proc{}, launches: map[string]*pendingLaunch{}}
}

// done reports that nothing more will be added to p's log. Call with mu held.
func (p *proc) done() bool { return p.exited && (p.outEnded || p.graceOver) }

// notify wakes the waiters on p. Call with mu held.
func (p *proc) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// info describes p. Call with mu held.
func (p *proc) info() proto.ProcInfo {
	i := proto.ProcInfo{ID: p.id, Command: p.command, Pid: p.pid, Running: !p.exited, Started: p.started, TTY: p.tty, LogSize: p.log.size}
	if p.exited {
		i.ExitCode, i.Signal, i.Ended = p.code, p.sig, p.ended
	}
	return i
}

func procErr(code, msg string) *proto.Result {
	return &proto.Result{Error: &proto.Error{Code: code, Message: msg}}
}

// running reports whether a managed process runs.
func (t *procTable) running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.order {
		if !p.exited {
			return true
		}
	}
	return false
}

// start starts req.Command as a managed process. It answers before the
// launch: when the answer goes out, the process is in the table with the
// pid of the launcher that becomes it, and then (not nil with a process)
// hands the launcher the command (launchInto). Otherwise the command would
// run first, on the CPU that the answer needs.
func (t *procTable) start(req proto.Request) (res *proto.Result, then func()) {
	pr := req.Proc
	size := pr.LogSize
	if size == 0 {
		size = proto.DefaultLogSize
	}
	if req.Dir != "" {
		if e := checkExecDir(req.Dir); e != nil {
			return &proto.Result{Error: e}, nil
		}
	}
	sh := shell()
	if sh != "/bin/sh" { // shell stat'ed /bin/sh already
		var err error
		if sh, err = exec.LookPath(sh); err != nil {
			return &proto.Result{Error: &proto.Error{Code: proto.CodeNotFound, Message: err.Error()}}, nil
		}
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	command := req.Command
	if len(command) > proto.KeptProcCommand {
		command = command[:proto.KeptProcCommand]
	}
	t.startMu.Lock()
	defer t.startMu.Unlock()
	t.mu.Lock()
	full := len(t.order) >= proto.MaxProcs && !t.evictLocked()
	t.mu.Unlock()
	if full {
		return procErr(proto.CodeTooManyProcs, "too many processes: the table holds "+strconv.Itoa(proto.MaxProcs)+" and none has exited"), nil
	}
	l, err := retryFork(context.Background(), t.takeLauncher)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return &proto.Result{Error: startError(req.Dir, err)}, nil
		}
		return failure(err), nil
	}
	var child [3]*os.File
	var out, stdin, master *os.File
	if pr.TTY {
		l.dropPipes()
		m, slave, err := OpenPTY()
		if err != nil {
			l.discard()
			return failure(err), nil
		}
		if err := SetWinsize(m, uint16(pr.Rows), uint16(pr.Cols)); err != nil {
			m.Close()
			slave.Close()
			l.discard()
			return failure(err), nil
		}
		child = [3]*os.File{slave, slave, slave}
		master, stdin, out = m, m, m
	} else {
		if stdin, out, child, err = l.takePipes(); err != nil {
			l.discard()
			return failure(err), nil
		}
	}
	t.mu.Lock()
	p := l.p
	p.id, p.command, p.tty, p.started = hex.EncodeToString(id[:]), command, pr.TTY, time.Now()
	p.log = procLog{size: size}
	p.stdin, p.master = stdin, master
	t.byID[p.id] = p
	t.order = append(t.order, p)
	if p.exited { // exited before it was filled in
		t.afterExitLocked(p)
	}
	info := p.info()
	t.mu.Unlock()
	go t.pump(p, out)
	muxSeen.Store(true) // activity, for the idle timeout (pid1_mux.go)
	ll, err := shellLaunch(sh, req.Command, mergeEnv(os.Environ(), req.Env), req.Dir, pr.TTY)
	return &proto.Result{Proc: &proto.ProcResult{Info: info}}, func() {
		t.launchInto(l, ll, child, err)
		ll.closeScript()
	}
}

// launchInto hands ll and the child's stdio to l, whose process was
// answered already, unless making ll failed with err. A launcher that does
// not take it (killed after it was found alive) is killed; its process
// then ends with status 127 and the reason in its output, as a command
// that could not be executed.
func (t *procTable) launchInto(l *launcher, ll launch, child [3]*os.File, err error) {
	if err == nil {
		err = l.launch(context.Background(), ll, child)
	}
	closeAll(&child)
	if err == nil {
		return
	}
	p := l.p
	t.mu.Lock()
	p.launchFailed = true
	if p.exited { // its exit came first
		p.code, p.sig = 127, 0
	}
	p.log.write([]byte("sandbox-helper: " + err.Error() + "\n"))
	p.notify()
	t.mu.Unlock()
	l.discard()
}

// childPipe makes a pipe whose one end goes to a child: the child's end is
// blocking, outside the poller (it is only passed on); ours is in it, for
// deadlines. childReads says which end is the child's.
func childPipe(childReads bool) (ours, theirs *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	o, c := fds[0], fds[1]
	if childReads {
		o, c = c, o
	}
	if err := syscall.SetNonblock(o, true); err != nil {
		syscall.Close(o)
		syscall.Close(c)
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(o), "|ours"), os.NewFile(uintptr(c), "|child"), nil
}

// evictLocked forgets the oldest exited process; false when none exited.
func (t *procTable) evictLocked() bool {
	for i, p := range t.order {
		if p.exited {
			t.order = append(t.order[:i:i], t.order[i+1:]...)
			delete(t.byID, p.id)
			return true
		}
	}
	return false
}

// pump reads p's output into its log until the output ends.
func (t *procTable) pump(p *proc, out *os.File) {
	buf := make([]byte, proto.ChunkSize)
	for {
		n, err := out.Read(buf)
		if n > 0 {
			t.mu.Lock()
			p.log.write(buf[:n])
			p.notify()
			t.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	t.mu.Lock()
	p.outEnded = true
	p.notify()
	t.mu.Unlock()
	if p.master == nil {
		out.Close()
	}
}

// reaped records the exit of pid, if it is a managed process's.
func (t *procTable) reaped(pid int, ws syscall.WaitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byPid[pid]
	if p == nil {
		return
	}
	delete(t.byPid, pid)
	p.exited, p.ended = true, time.Now()
	p.code = ws.ExitStatus()
	if ws.Signaled() {
		p.sig = int(ws.Signal())
		p.code = 128 + p.sig
	}
	if p.launchFailed {
		p.code, p.sig = 127, 0
	}
	p.notify()
	if p.id != "" { // a launcher that was not used yet has nothing more
		t.afterExitLocked(p)
	}
}

// afterExitLocked closes the stdin of p, which exited, and ends the wait
// for its output after outputGrace. Call with mu held.
func (t *procTable) afterExitLocked(p *proc) {
	if p.master == nil && !p.stdinClosed {
		p.stdinClosed = true
		go p.closeStdin()
	}
	time.AfterFunc(outputGrace, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		p.graceOver = true
		p.notify()
		if p.master != nil && !p.outEnded {
			// Something the process started keeps the terminal: stop reading it.
			_ = p.master.SetReadDeadline(time.Now())
		}
	})
}

func (p *proc) closeStdin() {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.stdin.Close()
}

// lookup finds the process of req, or the error result.
func (t *procTable) lookup(req proto.Request) (*proc, *proto.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[req.Proc.ID]
	if p == nil {
		return nil, procErr(proto.CodeProcNotFound, "no process "+clip(req.Proc.ID))
	}
	return p, nil
}

// handle runs one process request (its row of ops says how); in is the
// input of a write. A start's answer comes with then, which its caller
// runs right after it sent the answer (and also when the sending failed).
func (t *procTable) handle(ctx context.Context, req proto.Request, in []byte, send func(proto.Kind, []byte) error) (res *proto.Result, then func()) {
	if req.Op == proto.OpProcStart {
		return t.start(req)
	}
	if o := ops[req.Op]; o.table != nil {
		return o.table(t, ctx, req, in, send), nil
	}
	return procErr(proto.CodeBadRequest, "unknown operation "+clip(req.Op)), nil
}

// list answers a list request.
func (t *procTable) list() *proto.Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	res := &proto.Result{Procs: make([]proto.ProcInfo, 0, len(t.order))}
	for _, p := range t.order {
		res.Procs = append(res.Procs, p.info())
	}
	return res
}

// infoOf answers an info request about p.
func (t *procTable) infoOf(p *proc) *proto.Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &proto.Result{Proc: &proto.ProcResult{Info: p.info()}}
}

// waitChange waits, with mu held, until p changes, ctx ends or deadline
// passes; false when it did not change.
func (t *procTable) waitChange(ctx context.Context, p *proc, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 || ctx.Err() != nil {
		return false
	}
	ch := p.changed
	t.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	changed := false
	select {
	case <-ch:
		changed = true
	case <-ctx.Done():
	case <-timer.C:
	}
	t.mu.Lock()
	return changed
}

func waitDeadline(ms int64) time.Time {
	return time.Now().Add(min(time.Duration(ms)*time.Millisecond, proto.MaxProcWait))
}

// read sends p's log from pr.Cursor, at most pr.Max bytes, waiting up to
// pr.WaitMs for output when there is none.
func (t *procTable) read(ctx context.Context, p *proc, pr *proto.ProcRequest, send func(proto.Kind, []byte) error) *proto.Result {
	deadline := waitDeadline(pr.WaitMs)
	max := pr.Max
	if max <= 0 || max > proto.MaxProcRead {
		max = proto.MaxProcRead
	}
	t.mu.Lock()
	for pr.Cursor == p.log.total && !p.done() && t.waitChange(ctx, p, deadline) {
	}
	if pr.Cursor > p.log.total {
		t.mu.Unlock()
		return procErr(proto.CodeCursorAhead, "cursor "+strconv.FormatInt(pr.Cursor, 10)+" is beyond the output's end "+strconv.FormatInt(p.log.total, 10))
	}
	start := max64(pr.Cursor, p.log.base())
	data := p.log.read(start, max)
	res := &proto.ProcResult{Info: p.info(), Start: start, Next: start + int64(len(data)), Dropped: start - pr.Cursor}
	res.Done = p.done() && res.Next == p.log.total
	t.mu.Unlock()
	for len(data) > 0 {
		n := min(len(data), proto.ChunkSize)
		if err := send(proto.KindStdout, data[:n]); err != nil {
			return failure(err)
		}
		data = data[n:]
	}
	return &proto.Result{Proc: res}
}

func (t *procTable) wait(ctx context.Context, p *proc, ms int64) *proto.Result {
	deadline := waitDeadline(ms)
	t.mu.Lock()
	defer t.mu.Unlock()
	// Like exec.Cmd's Wait, until the output is in the log too (its end,
	// or outputGrace after the exit): a Read after Wait sees all of it.
	for !p.done() && t.waitChange(ctx, p, deadline) {
	}
	return &proto.Result{Proc: &proto.ProcResult{Info: p.info()}}
}

// write writes in to p's stdin; ctx's end stops a write that blocks.
func (t *procTable) write(ctx context.Context, p *proc, in []byte) *proto.Result {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	t.mu.Lock()
	exited, closed := p.exited, p.stdinClosed
	info := p.info()
	t.mu.Unlock()
	switch {
	case exited:
		return procErr(proto.CodeProcDone, "the process exited")
	case closed:
		return procErr(proto.CodeStdinClosed, "stdin is closed")
	}
	stop := context.AfterFunc(ctx, func() { _ = p.stdin.SetWriteDeadline(time.Now()) })
	n, err := p.stdin.Write(in)
	stop()
	_ = p.stdin.SetWriteDeadline(time.Time{})
	if err != nil && n == 0 {
		t.mu.Lock()
		exited = p.exited
		t.mu.Unlock()
		if exited || errors.Is(err, syscall.EPIPE) {
			return procErr(proto.CodeProcDone, "the process exited")
		}
		if ctx.Err() != nil {
			return failure(ctx.Err())
		}
		return failure(err)
	}
	return &proto.Result{Proc: &proto.ProcResult{Info: info, Written: n}}
}

func (t *procTable) closeStdin(p *proc) *proto.Result {
	t.mu.Lock()
	exited, closed := p.exited, p.stdinClosed
	if !exited && !closed && p.master == nil {
		p.stdinClosed = true
	}
	info := p.info()
	t.mu.Unlock()
	switch {
	case exited:
		return procErr(proto.CodeProcDone, "the process exited")
	case closed:
		return procErr(proto.CodeStdinClosed, "stdin is closed")
	}
	if p.master != nil {
		p.writeMu.Lock()
		_ = p.master.SetWriteDeadline(time.Now().Add(time.Second))
		_, err := p.master.Write([]byte{4}) // Ctrl-D: the terminal's end of file
		_ = p.master.SetWriteDeadline(time.Time{})
		p.writeMu.Unlock()
		if err != nil {
			return failure(err)
		}
	} else {
		p.closeStdin()
	}
	return &proto.Result{Proc: &proto.ProcResult{Info: info}}
}

// control signals, kills or resizes p.
func (t *procTable) control(p *proc, req proto.Request) *proto.Result {
	if req.Op != proto.OpProcResize {
		// The signal is for the command, not its launcher (which would
		// die of it before taking the command: exit status 127).
		t.launchPending(p.id)
	}
	t.mu.Lock()
	exited := p.exited
	t.mu.Unlock()
	if exited {
		return procErr(proto.CodeProcDone, "the process exited")
	}
	switch req.Op {
	case proto.OpProcSignal:
		if err := syscall.Kill(-p.pid, syscall.Signal(req.Proc.Signal)); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				return procErr(proto.CodeProcDone, "the process exited")
			}
			return failure(err)
		}
	case proto.OpProcKill:
		killTree(p.pid)
		// Wait (briefly) for PID 1 to collect it, so that the answer's info says so.
		t.wait(context.Background(), p, deathWait.Milliseconds())
	case proto.OpProcResize:
		if p.master == nil {
			return procErr(proto.CodeBadRequest, "the process has no terminal")
		}
		if err := SetWinsize(p.master, uint16(req.Proc.Rows), uint16(req.Proc.Cols)); err != nil {
			return failure(err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return &proto.Result{Proc: &proto.ProcResult{Info: p.info()}}
}

func max64(a, b int64) int64 { return max(a, b) }
