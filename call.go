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
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/moby/moby/api/pkg/stdcopy"
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
}

// call runs one request through a fresh helper exec and waits for its result.
func (s *DockerSandbox) call(ctx context.Context, req proto.Request, co callOptions) (*proto.Result, error) {
	c, err := s.startCall(ctx, req, co)
	if err != nil {
		return nil, err
	}
	return c.wait()
}

// helperCall is one running request on its own attached exec.
type helperCall struct {
	ctx      context.Context
	s        *DockerSandbox
	conn     client.HijackedResponse
	frames   *proto.Reader
	out      *proto.Writer
	co       callOptions
	diag     *tailBuffer // the helper's own stderr, for error messages
	hello    proto.Hello
	stopCtx  func() bool
	closeOne sync.Once
}

// startCall creates and attaches the exec, checks the helper's hello and
// sends the request.
func (s *DockerSandbox) startCall(ctx context.Context, req proto.Request, co callOptions) (*helperCall, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ex, err := s.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User:         co.user,
		WorkingDir:   "/", // the working dir may have been deleted; requests carry absolute paths
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          []string{helperPath, "call"},
	})
	if err != nil {
		return nil, s.dockerErr("exec", err)
	}
	att, err := s.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, s.dockerErr("attach", err)
	}
	c := &helperCall{ctx: ctx, s: s, conn: att.HijackedResponse, co: co, diag: &tailBuffer{max: 4096}, out: proto.NewWriter(att.Conn)}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, c.diag, att.Reader)
		pw.CloseWithError(err)
	}()
	br := bufio.NewReader(pr)
	c.frames = proto.NewReader(br)
	c.stopCtx = context.AfterFunc(ctx, c.cancel)

	// Anything but a hello (e.g. the runtime's "exec failed" text) is
	// reported as it is.
	if first, err := br.Peek(1); err == nil && proto.Kind(first[0]) != proto.KindHello {
		text, _ := br.Peek(min(br.Buffered(), 512))
		return nil, c.fail(fmt.Errorf("the helper did not start: %q", text))
	}
	f, err := c.frames.ReadFrame()
	if err == nil && f.Kind != proto.KindHello {
		err = fmt.Errorf("first frame is %q, not hello", f.Kind)
	}
	if err == nil {
		err = json.Unmarshal(f.Payload, &c.hello)
	}
	if err == nil && c.hello.Version != proto.Version {
		err = fmt.Errorf("helper speaks protocol %d, library speaks %d", c.hello.Version, proto.Version)
	}
	if err != nil {
		return nil, c.fail(err)
	}
	body, err := json.Marshal(req)
	if err == nil {
		err = c.out.WriteFrame(proto.KindRequest, 1, body)
	}
	if err != nil {
		return nil, c.fail(err)
	}
	if co.stdin != nil {
		go c.pumpInput()
	}
	return c, nil
}

// pumpInput sends the caller's stdin as Input frames, then an empty one.
func (c *helperCall) pumpInput() {
	buf := make([]byte, proto.ChunkSize)
	for {
		n, err := c.co.stdin.Read(buf)
		if n > 0 {
			if c.out.WriteFrame(proto.KindInput, 1, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			_ = c.out.WriteFrame(proto.KindInput, 1, nil)
			return
		}
	}
}

// wait relays output frames until the result arrives.
func (c *helperCall) wait() (*proto.Result, error) {
	defer c.close()
	for {
		f, err := c.frames.ReadFrame()
		if err != nil {
			return nil, c.fail(err)
		}
		switch f.Kind {
		case proto.KindStdout, proto.KindStderr:
			w := c.co.stdout
			if f.Kind == proto.KindStderr {
				w = c.co.stderr
			}
			if w != nil {
				if _, err := w.Write(f.Payload); err != nil {
					return nil, fmt.Errorf("sandbox: write command output: %w", err)
				}
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

// cancel asks the helper to kill the request, and drops the connection if
// it does not answer in time.
func (c *helperCall) cancel() {
	go func() { _ = c.out.WriteFrame(proto.KindCancel, 1, nil) }()
	time.AfterFunc(cancelGrace, c.close)
}

func (c *helperCall) close() {
	c.closeOne.Do(func() {
		c.stopCtx()
		c.conn.Close()
	})
}

// fail closes the call and explains err: the context's end, a sandbox that
// is gone, or a helper that broke the protocol.
func (c *helperCall) fail(err error) error {
	c.close()
	if ctxErr := c.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if c.s.closed.Load() {
		return ErrClosed
	}
	msg := bytes.TrimSpace(c.diag.Bytes())
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the helper ended without an answer")
	}
	if len(msg) > 0 {
		return fmt.Errorf("%w: %v: %s", ErrHelper, err, msg)
	}
	return fmt.Errorf("%w: %v", ErrHelper, err)
}

// dockerErr explains a failed Docker call on the sandbox.
func (s *DockerSandbox) dockerErr(op string, err error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if ge := gone(err); errors.Is(ge, ErrGone) {
		return fmt.Errorf("sandbox %s: %w", s.ID(), ge)
	}
	return fmt.Errorf("sandbox %s: %s: %w", s.ID(), op, err)
}

// tailBuffer keeps the first max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf.Bytes())
}
