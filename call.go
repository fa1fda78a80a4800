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
func (s *DockerSandbox) call(ctx context.Context, req proto.Request, co callOptions) (*proto.Result, error) {
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
func (s *DockerSandbox) start(ctx context.Context, req proto.Request, co callOptions) (pending, error) {
	if co.shared && co.user == "" && !s.opts.noChannel {
		ch, err := s.channel(ctx)
		if errors.Is(err, errHelperNoHello) || errors.Is(err, errDaemonSilent) {
			return nil, err // an exec of its own would wait as long again
		}
		if ch != nil {
			if p, err := ch.start(ctx, req, co); err == nil {
				return p, nil
			}
		}
	}
	return s.startExec(ctx, req, co)
}

// retrySafe reports whether running op twice does no harm.
func retrySafe(op string) bool {
	switch op {
	case proto.OpRead, proto.OpLs, proto.OpGlob, proto.OpGrep, proto.OpStat, proto.OpPrepare:
		return true
	}
	return false
}

// helperCall is one running request on its own attached exec.
type helperCall struct {
	*helperConn
	ctx      context.Context
	s        *DockerSandbox
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
func (s *DockerSandbox) attachHelper(ctx context.Context, mode, user string) (*helperConn, error) {
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
	hc := &helperConn{conn: st, diag: &headBuffer{max: 4096}, out: proto.NewWriter(st)}
	go func() { _, _ = io.Copy(hc.diag, st.Stderr()) }()
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
func (s *DockerSandbox) handshakeErr(ctx, hctx context.Context, op string, err error) error {
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
func (s *DockerSandbox) startExec(ctx context.Context, req proto.Request, co callOptions) (*helperCall, error) {
	hc, err := s.attachHelper(ctx, "call", co.user)
	if err != nil {
		return nil, err
	}
	if err := checkTTYHelper(req, hc.hello); err != nil {
		hc.close()
		return nil, err
	}
	c := &helperCall{helperConn: hc, ctx: ctx, s: s, co: co, op: req.Op}
	c.out.Watch(silenceLimit, func() { // a helper that stops reading input
		if !s.pausedWithin(silenceLimit) {
			c.close()
		}
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
				err = errHelperSilent
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
	c.closeOne.Do(c.helperConn.close)
}

// fail closes the call and explains err.
func (c *helperCall) fail(err error) error {
	c.close()
	return c.s.helperErr(c.ctx, err, c.diag)
}

// helperErr explains a failed exchange with the helper: the context's end,
// a closed sandbox, or a helper that failed or broke the protocol (with
// what it printed on stderr).
func (s *DockerSandbox) helperErr(ctx context.Context, err error, diag *headBuffer) error {
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
func (s *DockerSandbox) dockerErr(op string, err error) error {
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
