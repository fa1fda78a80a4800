package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/client"
)

// cancelGrace is how long a cancelled call waits for the helper to confirm
// that it killed the command before the connection is dropped (which also
// makes the helper kill it).
const cancelGrace = time.Second

// callOptions say how a helper request runs.
type callOptions struct {
	user           string
	stdin          io.Reader // fed to the request as Input frames
	stdout, stderr io.Writer // receive output frames
	// shared allows the sandbox's shared channel: the request's input and
	// output are the library's own, so they cannot stall other requests.
	shared bool
	stream *stream // a dial or a watch (stream.go)
}

// deliver writes an output frame to the writer for its stream, if any.
func (co callOptions) deliver(f proto.Frame) error {
	w := co.stdout
	if f.Kind == proto.KindStderr {
		w = co.stderr
	}
	if w == nil {
		return nil
	}
	_, err := w.Write(f.Payload)
	return err
}

// pumpInput sends r as Input frames of request id, then an empty one
// (the end of input). It stops when a write fails.
func pumpInput(out *proto.Writer, id uint32, r io.Reader) {
	buf := make([]byte, proto.ChunkSize)
	for {
		n, err := r.Read(buf)
		if n > 0 && out.WriteFrame(proto.KindInput, id, buf[:n]) != nil {
			return
		}
		if err != nil {
			_ = out.WriteFrame(proto.KindInput, id, nil)
			return
		}
	}
}

// pending is a request in flight, on the shared channel or its own exec.
type pending interface {
	wait() (*proto.Result, error)
	// lost is called when wait returned no result: it makes sure the
	// request's command is dead.
	lost()
	// context is the request's.
	context() context.Context
	// operation is the request's Op.
	operation() string
}

// call runs one request and waits for its result. A read-only request
// that the shared channel lost when it broke is retried on its own exec.
// Without a deadline, a request other than exec is given up after opBound
// (plus a second per opBoundRate bytes of input).
func (s *Sandbox) call(ctx context.Context, req proto.Request, co callOptions) (*proto.Result, error) {
	if _, ok := ctx.Deadline(); !ok && req.Op != proto.OpExec {
		bound := opBound
		if in, ok := co.stdin.(interface{ Len() int }); ok {
			bound += time.Duration(in.Len()/opBoundRate) * time.Second
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, bound, errOpBound)
		defer cancel()
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.leave()
	p, err := s.start(ctx, req, co)
	if err == nil {
		var res *proto.Result
		res, err = s.await(p)
		if errors.Is(err, errChannelBroken) && s.closed.Load() {
			return nil, ErrClosed
		}
		if errors.Is(err, errChannelBroken) && retrySafe(req.Op) {
			if p, err = s.startExec(ctx, req, co); err == nil {
				res, err = s.await(p)
			}
		}
		if err == nil {
			return res, nil
		}
	}
	if context.Cause(ctx) == errOpBound {
		err = errOpBound
	}
	return nil, s.goneOr(ctx, err)
}

// start sends a request: on the shared channel when allowed and working,
// else on an exec of its own.
func (s *Sandbox) start(ctx context.Context, req proto.Request, co callOptions) (pending, error) {
	if co.shared && co.user == "" && !s.opts.noChannel {
		ch, err := s.channel(ctx)
		if errors.Is(err, errHelperNoHello) || errors.Is(err, errDaemonSilent) {
			return nil, err // an exec of its own would wait as long again
		}
		if ch != nil {
			p, err := ch.start(ctx, req, co)
			if err == nil {
				return p, nil
			}
			if errors.Is(err, ErrProtocolVersion) {
				return nil, err // its own exec runs the same helper
			}
		}
	}
	return s.startExec(ctx, req, co)
}

// helperCan refuses, before it is sent, a request that needs a capability
// the helper lacks (proto.Hello.Lacks): a helper that predates the
// operation, a terminal or an offset would refuse it, or worse, do
// something else (run a command without a terminal, read from 0). It is
// the one place where the library meets an old helper (see the policy in
// internal/proto/caps.go); the error names what the helper cannot do.
func helperCan(req proto.Request, hello proto.Hello) error {
	if c, lacks := hello.Lacks(req); lacks {
		return fmt.Errorf("%w: the sandbox's helper cannot %s; it predates this library: make a new sandbox", ErrProtocolVersion, c.Can())
	}
	return nil
}

// retrySafe reports whether running op twice does no harm (the table of
// operations says so: proto.OpSpec.RetrySafe).
func retrySafe(op string) bool { return proto.RetrySafe(op) }

// helperCall is one running request on its own attached exec.
type helperCall struct {
	*helperConn
	ctx      context.Context
	s        *Sandbox
	co       callOptions
	op       string // the request's
	stopCtx  func() bool
	closeOne sync.Once
	// readingSince is when wait began to wait for the next frame (unix
	// nanoseconds), 0 while it handles one; see watch.
	readingSince atomic.Int64
	stalled      atomic.Bool // watch dropped the connection
}

// helperConn is an exec stream of the helper whose hello was checked.
type helperConn struct {
	conn   engine.Stream
	frames *proto.Reader
	out    *proto.Writer
	diag   *headBuffer // the helper's own stderr, for error messages
	hello  proto.Hello
	// lastByte is when the helper's stdout last gave bytes (unix
	// nanoseconds): a large frame in transit is progress, not silence.
	lastByte atomic.Int64
}

// byteClock records in last when r last gave bytes.
type byteClock struct {
	r    io.Reader
	last *atomic.Int64
}

func (b byteClock) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// heardSince is the later of since and the helper's last byte; 0 stays 0
// (nothing awaited).
func (hc *helperConn) heardSince(since int64) int64 {
	if since == 0 {
		return 0
	}
	return max(since, hc.lastByte.Load())
}

// close ends the stream, its readers included.
func (hc *helperConn) close() {
	hc.conn.Close()
}

// attachHelper starts the helper in mode ("call" or "serve") as user and
// reads its hello, within ctx and handshakeTimeout. The connection
// outlives ctx.
func (s *Sandbox) attachHelper(ctx context.Context, mode, user string) (*helperConn, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeoutCause(ctx, handshakeTimeout, errDaemonSilent)
	defer cancel()
	// In "/": the working dir may have been deleted; requests carry
	// absolute paths.
	st, err := s.eng.Exec(hctx, s.id, []string{helperPath, mode}, user)
	if err != nil {
		return nil, s.handshakeErr(ctx, hctx, "exec", err)
	}
	diag := &headBuffer{max: 4096}
	go func() { _, _ = io.Copy(diag, st.Stderr()) }()
	return s.greet(ctx, hctx, st, diag)
}

// greet reads the hello of the helper at the other end of st, whose
// standard error goes to diag, within hctx (the handshake's bound, under
// ctx), and returns the connection; on failure st is closed.
func (s *Sandbox) greet(ctx, hctx context.Context, st engine.Stream, diag *headBuffer) (*helperConn, error) {
	hc := &helperConn{conn: st, diag: diag, out: proto.NewWriter(st)}
	br := bufio.NewReader(byteClock{st.Stdout(), &hc.lastByte})
	hc.frames = proto.NewReader(br)
	hc.frames.ReuseOutput() // output is delivered before the next frame is read
	if err := hc.readHello(hctx, br); err != nil {
		hc.close()
		if context.Cause(hctx) == errDaemonSilent && ctx.Err() == nil {
			err = errHelperNoHello
		}
		return nil, s.helperErr(ctx, err, hc.diag)
	}
	return hc, nil
}

// handshakeErr explains a failed Docker call of the helper handshake: the
// caller's context, the handshake's bound (a daemon that does not answer),
// or the daemon's error.
func (s *Sandbox) handshakeErr(ctx, hctx context.Context, op string, err error) error {
	if ctx.Err() == nil && context.Cause(hctx) == errDaemonSilent {
		return fmt.Errorf("sandbox %s: %s: %w", s.ID(), op, errDaemonSilent)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !s.closed.Load() {
		return ctxErr
	}
	return s.dockerErr(op, err)
}

// readHello checks the helper's first frame. Anything but a hello (e.g. the
// runtime's "exec failed" text) is reported as it is.
func (hc *helperConn) readHello(ctx context.Context, br *bufio.Reader) error {
	stop := context.AfterFunc(ctx, hc.close)
	defer stop()
	if first, err := br.Peek(1); err == nil && proto.Kind(first[0]) != proto.KindHello {
		text, _ := br.Peek(min(br.Buffered(), 512))
		return fmt.Errorf("the helper did not start: %q", text)
	}
	f, err := hc.frames.ReadFrameLimited(func(proto.Kind, uint32) int { return proto.MaxHello })
	if err != nil {
		return err
	}
	if f.Kind != proto.KindHello {
		return fmt.Errorf("first frame is %q, not hello", f.Kind)
	}
	if err := json.Unmarshal(f.Payload, &hc.hello); err != nil {
		return fmt.Errorf("bad hello: %w", err)
	}
	if hc.hello.Version != proto.Version {
		return fmt.Errorf("%w: the helper speaks protocol version %d, this library version %d", ErrProtocolVersion, hc.hello.Version, proto.Version)
	}
	return nil
}

// execRequestID is the ID of the one request on an exec of its own.
const execRequestID = 1

// startExec sends the request on an exec of its own.
func (s *Sandbox) startExec(ctx context.Context, req proto.Request, co callOptions) (*helperCall, error) {
	hc, err := s.attachHelper(ctx, "call", co.user)
	if err != nil {
		if co.user != "" {
			if uerr := s.unknownUser(ctx, co.user, err); uerr != nil {
				return nil, uerr
			}
		}
		return nil, err
	}
	if err := helperCan(req, hc.hello); err != nil {
		hc.close()
		return nil, err
	}
	c := &helperCall{helperConn: hc, ctx: ctx, s: s, co: co, op: req.Op}
	if !s.trackExec(c) {
		hc.close()
		return nil, ErrClosed
	}
	c.out.Watch(silenceLimit, func(waited time.Duration) bool { // a helper that stops reading input
		if waited < silenceLimit+maxExcuse && s.excused(silenceLimit) {
			return false
		}
		c.close()
		return true
	})
	c.stopCtx = context.AfterFunc(ctx, c.cancel)
	body, err := json.Marshal(req)
	if err == nil {
		err = c.out.WriteFrame(proto.KindRequest, execRequestID, body)
	}
	if err != nil {
		c.stopCtx()
		return nil, c.fail(err)
	}
	if co.stdin != nil {
		go pumpInput(c.out, execRequestID, c.co.stdin)
	}
	return c, nil
}

// wait relays output frames until the result arrives.
func (c *helperCall) wait() (*proto.Result, error) {
	stopWatch := make(chan struct{})
	defer func() {
		close(stopWatch)
		c.stopCtx()
		c.close()
	}()
	go c.watch(stopWatch)
	for {
		c.readingSince.Store(time.Now().UnixNano())
		f, err := c.frames.ReadFrameLimited(c.limit)
		c.readingSince.Store(0)
		if err != nil {
			if c.stalled.Load() {
				err = c.s.silenceErr(errHelperSilent)
			}
			if errors.Is(err, proto.ErrBadFrame) {
				err = fmt.Errorf("%w: %w", errHelperLied, err)
			}
			return nil, c.fail(err)
		}
		if f.Kind != proto.KindAlive && f.ID != execRequestID {
			return nil, c.fail(fmt.Errorf("%w: a %q frame for request %d, not %d", errHelperLied, f.Kind, f.ID, execRequestID))
		}
		switch f.Kind {
		case proto.KindAlive:
		case proto.KindStdout, proto.KindStderr:
			if !proto.HasOutput(c.op) {
				return nil, c.fail(fmt.Errorf("%w: output from a %s request", errHelperLied, c.op))
			}
			if err := c.co.deliver(f); errors.Is(err, ErrHelper) {
				return nil, c.fail(err)
			} else if err != nil {
				return nil, fmt.Errorf("sandbox: write command output: %w", err)
			}
		case proto.KindResult:
			var res proto.Result
			if err := json.Unmarshal(f.Payload, &res); err != nil {
				return nil, c.fail(err)
			}
			if err := c.ctx.Err(); err != nil {
				return &res, err
			}
			return &res, nil
		default:
			return nil, c.fail(fmt.Errorf("unexpected frame %q", f.Kind))
		}
	}
}

// limit says how large a frame of the call may be.
func (c *helperCall) limit(kind proto.Kind, _ uint32) int { return proto.MaxFrom(kind, c.op) }

// cancel asks the helper to kill the request, and drops the connection if
// it does not answer in time.
func (c *helperCall) cancel() {
	go func() { _ = c.out.WriteFrame(proto.KindCancel, execRequestID, nil) }()
	time.AfterFunc(cancelGrace, c.close)
}

func (c *helperCall) close() {
	c.closeOne.Do(func() {
		c.helperConn.close()
		c.s.untrackExec(c)
	})
}

// trackExec records an open call on an exec of its own, for closeExecs;
// false once the handle is closed (the caller closes the call).
func (s *Sandbox) trackExec(c *helperCall) bool {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	if s.closed.Load() {
		return false
	}
	if s.execs == nil {
		s.execs = map[*helperCall]struct{}{}
	}
	s.execs[c] = struct{}{}
	return true
}

func (s *Sandbox) untrackExec(c *helperCall) {
	s.execMu.Lock()
	delete(s.execs, c)
	s.execMu.Unlock()
}

// closeExecs ends the calls on execs of their own of a handle Close
// closed: they return ErrClosed (Detach leaves them running). Removing the container would end them only if the
// engine ends the streams of a container it removes; gVisor under Docker
// 20.10 sometimes does not, and a handle closed while paused takes the
// silence of a frozen helper for a pause.
func (s *Sandbox) closeExecs() {
	s.execMu.Lock()
	calls := make([]*helperCall, 0, len(s.execs))
	for c := range s.execs {
		calls = append(calls, c)
	}
	s.execMu.Unlock()
	for _, c := range calls {
		c.close()
	}
}

// fail closes the call and explains err.
func (c *helperCall) fail(err error) error {
	c.close()
	return c.s.helperErr(c.ctx, err, c.diag)
}

// helperErr explains a failed exchange with the helper: the context's end,
// a closed sandbox, or a helper that failed or broke the protocol (with
// what it printed on stderr).
func (s *Sandbox) helperErr(ctx context.Context, err error, diag *headBuffer) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if errors.Is(err, ErrHelper) {
		return err
	}
	msg := bytes.TrimSpace(diag.Bytes())
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the helper ended without an answer")
	}
	if len(msg) > 0 {
		return fmt.Errorf("%w: %w: %s", ErrHelper, err, msg)
	}
	return fmt.Errorf("%w: %w", ErrHelper, err)
}

// dockerErr explains a failed engine call on the sandbox.
func (s *Sandbox) dockerErr(op string, err error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if ge := gone(err); errors.Is(ge, ErrGone) || errors.Is(ge, ErrPaused) {
		return fmt.Errorf("sandbox %s: %w", s.ID(), ge)
	}
	if errors.Is(err, engine.ErrUnreachable) || client.IsErrConnectionFailed(err) {
		// %v, not %w: a missing socket's ENOENT must not pass for a
		// missing file (fs.ErrNotExist).
		return fmt.Errorf("sandbox %s: %s: %w: %v", s.ID(), op, ErrDaemonUnreachable, err)
	}
	return fmt.Errorf("sandbox %s: %s: %w", s.ID(), op, err)
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (t *headBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf.Bytes())
}

// A command must not outlive its call. The helper serving a request kills
// the command's tree on timeout, on cancel and when its connection drops;
// but a helper that is itself killed or stopped from inside the sandbox
// (kill $PPID, kill -STOP) can do none of that. Every helper leads a
// session, which the commands it starts share; when a call ends without a
// result, the library has another helper kill the running commands of that
// session (proto.OpKill). A helper with requests running says it is alive
// every proto.AliveInterval, so that a stopped one is noticed, and the
// library enforces a command's timeout itself when the helper misses it.

// killTimeout bounds the exec that kills a lost helper's commands, not
// counting the engine's stalls (boundByEngine).
const killTimeout = 5 * time.Second

// stallTimeout is how long the shared channel may stay silent with
// requests pending, and then how long it has to answer a check, before it
// is dropped as stalled.
const stallTimeout = 5 * time.Second

// silenceLimit is how long a helper serving a request on an exec of its
// own may send nothing before the call gives it up as stopped.
const silenceLimit = 10 * time.Second

// timeoutBackstop is how long past a command's timeout the library waits
// for the helper to report it, before it ends the call itself.
const timeoutBackstop = 3 * time.Second

// handshakeTimeout bounds the start of a helper exec (exec create, attach,
// hello), whatever the caller's context says: the daemon or a helper
// replaced from inside the sandbox may never answer. Generous: with 50
// sandboxes starting at once on 2 loaded cores, healthy starts took over 10 s.
const handshakeTimeout = 30 * time.Second

// opBound bounds a request other than exec when its context has no
// deadline: a helper can say it is alive for ever without answering.
const opBound = 20 * time.Second

// opBoundRate is the rate (bytes per second) at which a request's input
// adds to opBound: a large write may take longer.
const opBoundRate = 10 << 20

var (
	errDaemonSilent   = fmt.Errorf("%w: no answer within %v", ErrDaemonUnreachable, handshakeTimeout)
	errHelperNoHello  = fmt.Errorf("%w: the helper did not start within %v", ErrHelper, handshakeTimeout)
	errOpBound        = fmt.Errorf("%w: no answer within %v", ErrHelper, opBound)
	errHelperLied     = fmt.Errorf("%w: the helper broke the protocol", ErrHelper)
	errChannelStalled = fmt.Errorf("%w: the shared channel stopped answering", ErrHelper)
	errTimeoutMissed  = fmt.Errorf("%w: the helper missed the command's timeout", ErrHelper)
	errHelperSilent   = fmt.Errorf("%w: the helper stopped answering", ErrHelper)
)

// await waits for p's result. When none came (the helper died, stopped, or
// did not confirm a cancel), the commands of p's helper may still run: p
// makes sure they do not, before await returns, unless the caller's
// context ends first: the call then returns at once and they are killed in
// the background (within killTimeout and the engine's stalls, or
// stallTimeout for the shared channel).
// A request other than exec starts no command: its helper is dealt with in
// the background.
func (s *Sandbox) await(p pending) (*proto.Result, error) {
	res, err := p.wait()
	if res == nil && err != nil {
		ctx := p.context()
		if p.operation() != proto.OpExec || ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrHelper) {
			go p.lost()
		} else {
			lost := make(chan struct{})
			go func() {
				p.lost()
				close(lost)
			}()
			select {
			case <-lost:
			case <-ctx.Done():
				if ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrHelper) {
					<-lost // ended by the library's own bound: within killTimeout
				} // else the caller's deadline comes first
			}
		}
	}
	return res, err
}

// killSession has another helper, run as user, kill the running commands of
// the helper leading session, and that helper. It fails quietly: the
// sandbox may be closed or gone, and the caller has an error to report.
func (s *Sandbox) killSession(session int, user string) {
	if session <= 1 {
		return
	}
	if f := testhook.BeforeKill.Load(); f != nil { // a test freezes the daemon there
		(*f)(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer s.boundByEngine(cancel, killTimeout)()
	if p, err := s.startExec(ctx, proto.Request{Op: proto.OpKill, Session: session}, callOptions{user: user}); err == nil {
		_, _ = p.wait()
	}
}

// watch drops the connection when wait has waited silenceLimit for a frame:
// a helper with a request running says it is alive every
// proto.AliveInterval, so it has been stopped. (Time spent delivering
// output to a slow writer does not count.)
func (c *helperCall) watch(stop <-chan struct{}) {
	c.s.watchSilence(stop, func() int64 { return c.heardSince(c.readingSince.Load()) }, silenceLimit, func() {
		c.stalled.Store(true)
		c.close()
	})
}

// lost makes sure the request's command is dead: its helper serves it
// alone, so it and its commands are killed.
func (c *helperCall) lost() { c.s.killSession(c.hello.Session, c.co.user) }

func (c *helperCall) context() context.Context { return c.ctx }
func (c *helperCall) operation() string        { return c.op }

func (c *chanCall) context() context.Context { return c.ctx }
func (c *chanCall) operation() string        { return c.op }

// lost makes sure the request's command is dead. On a broken channel, the
// channel's commands are killed (killCommands); on one that did not confirm a
// cancel in time, a check tells a slow helper (which will kill the command)
// from a stopped one (the channel is then broken).
func (c *chanCall) lost() {
	if !c.ch.broken() {
		<-c.ch.check()
	}
	if c.ch.broken() {
		<-c.ch.killed
	}
}

// killCommands kills the commands of a broken channel's helper, then closes
// reaped. (A channel breaks with ErrClosed only when the sandbox closes:
// killSession then does nothing, and removing the container ends them.)
func (ch *channel) killCommands() {
	defer close(ch.killed)
	ch.s.killSession(ch.hc.hello.Session, "")
}

// watch checks the channel when requests are pending and the helper, which
// says it is alive every proto.AliveInterval while it has requests, has
// been silent: after endedSilence it asks the engine whether the container
// still runs (once per silence), after stallTimeout it checks the channel
// (the helper may have been stopped).
func (ch *channel) watch() {
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	var looked int64 // the heard time of the silence last looked into
	for {
		select {
		case <-ch.done:
			return
		case <-t.C:
			ch.mu.Lock()
			busy := len(ch.pending) > 0
			ch.mu.Unlock()
			if !busy {
				continue
			}
			heard := ch.heard.Load()
			quiet := ch.s.silence(ch.hc.heardSince(heard)) // not while paused, nor the engine's stalls
			switch {
			case quiet > stallTimeout && ch.s.engWatch.unreachable():
				ch.breakWith(errDaemonSilent) // a check would wait on the engine too
			case quiet > stallTimeout:
				ch.check()
			case quiet > endedSilence && looked != heard:
				looked = heard
				go ch.breakIfEnded()
			}
		}
	}
}

// endedSilence is how long a busy channel may be silent before the engine
// is asked whether its container still runs: two missed alive frames.
const endedSilence = 2 * proto.AliveInterval

// breakIfEnded breaks the channel when its container no longer runs. The
// connection of a container that ended does not always end with it: under
// gVisor, one killed from outside left its exec's stream open, and every
// request on it waited for the stall checks (ten seconds) to fail.
func (ch *channel) breakIfEnded() {
	ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
	defer cancel()
	info, err := ch.s.eng.Inspect(ctx, ch.s.id)
	if errors.Is(err, engine.ErrNotFound) || err == nil && ended(info.State) {
		ch.breakWith(errContainerEnded)
	}
}

// check makes sure the channel still answers: after a silence or a cancel
// it did not confirm, its helper may have been stopped, and every request
// on it would wait for ever. It sends a trivial request; without an answer
// within stallTimeout the channel is broken. Meanwhile the channel takes
// no new requests. The returned channel is closed with the verdict;
// concurrent checks share one.
func (ch *channel) check() <-chan struct{} {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.checked != nil {
		return ch.checked
	}
	done := make(chan struct{})
	ch.checked = done
	go func() {
		ch.probe()
		ch.mu.Lock()
		ch.checked = nil
		ch.mu.Unlock()
		close(done)
	}()
	return done
}

// suspect reports whether a check of the channel runs.
func (ch *channel) suspect() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.checked != nil
}

func (ch *channel) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), stallTimeout)
	defer cancel()
	c, err := ch.start(ctx, proto.Request{Op: proto.OpStat, Paths: []string{"/"}}, callOptions{})
	if err != nil {
		// A writer held the connection all along: the helper stopped
		// reading, unless the engine stalled (the watch checks again).
		if ctx.Err() != nil && !ch.s.excused(stallTimeout) {
			ch.breakWith(ch.s.silenceErr(errChannelStalled))
		}
		return // else broken already
	}
	// The answer may wait behind a large frame in transit: silence breaks
	// the channel, and so does no answer within twice the stall bound (a
	// helper that talks but never answers), unless the engine stalled.
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	bound := time.NewTimer(2 * stallTimeout)
	defer bound.Stop()
	for asked := time.Now().UnixNano(); ; {
		select {
		case <-c.result:
			return
		case <-ch.done:
			return
		case <-bound.C:
			if time.Since(time.Unix(0, asked)) < 2*stallTimeout+maxExcuse && ch.s.excused(2*stallTimeout) {
				bound.Reset(2 * stallTimeout)
				continue
			}
			ch.breakWith(ch.s.silenceErr(errChannelStalled))
			return
		case <-t.C:
			if ch.s.silence(ch.hc.heardSince(asked)) > stallTimeout {
				ch.breakWith(ch.s.silenceErr(errChannelStalled))
				return
			}
		}
	}
}
