package sandboxeino

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cloudwego/eino/adk/filesystem"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/tools"
)

// Execute runs req.Command with sh -c in the sandbox's working directory
// (sandbox.Sandbox.Execute): stdout and stderr combined, capped at
// the sandbox's max output bytes (Truncated then), the exit code set (124
// on timeout, with a "Command timed out" line). When ctx ends, the
// command's process tree is killed and ctx's error returned.
func (b *Backend) Execute(ctx context.Context, req *filesystem.ExecuteRequest) (*filesystem.ExecuteResponse, error) {
	if req == nil {
		return nil, errNilRequest
	}
	opts, id := b.execOpts, compose.GetToolCallID(ctx)
	capturing := b.capture != nil && id != ""
	if capturing {
		p := path.Join(b.capture.dir, strings.NewReplacer(".", "_", "/", "_", `\`, "_").Replace(id))
		opts = append(opts[:len(opts):len(opts)], sandbox.ExecCapture(p, b.capture.max))
	}
	r, err := b.sb.Execute(ctx, req.Command, opts...)
	if capturing && tools.CaptureRefused(err) {
		// Refused before anything ran: the output comes inline.
		capturing = false
		r, err = b.sb.Execute(ctx, req.Command, b.execOpts...)
	}
	if err != nil {
		return nil, err
	}
	code := r.ExitCode
	if c := r.Capture; capturing && c != nil && c.Err == nil {
		if c.Total > b.capture.budget {
			return &filesystem.ExecuteResponse{Output: tools.CapturedMessage(id, r), ExitCode: &code}, nil
		}
		_ = b.sb.Delete(ctx, c.Path)
	}
	return &filesystem.ExecuteResponse{Output: r.Output, ExitCode: &code, Truncated: r.Truncated}, nil
}

// ExecuteStreaming runs req.Command as Execute does and streams its output
// as the command produces it: chunks with Output only, then one last chunk
// with what Execute adds after the output (the truncation marker, the
// timeout line), ExitCode and Truncated. The chunks' outputs joined are
// Execute's Output, except that a run of invalid UTF-8 bytes split between
// two writes of the command becomes two U+FFFD instead of one. The stream
// holds at most the sandbox's max output bytes, so a reader that falls
// behind never holds up the command or grows memory past that.
//
// Ending ctx, or closing the reader before its end, kills the command's
// process tree (a closed reader is noticed within a second: while the
// command is silent, the stream carries an empty chunk every half second,
// which Eino's execute tool skips); the stream then ends with ctx's error.
// An empty command is an error at once; any other failure (a closed
// sandbox, say) ends the stream. Read the stream to its end or close it:
// its writer waits for the reader.
func (b *Backend) ExecuteStreaming(ctx context.Context, req *filesystem.ExecuteRequest) (*schema.StreamReader[*filesystem.ExecuteResponse], error) {
	if req == nil {
		return nil, errNilRequest
	}
	if req.Command == "" {
		return nil, sandbox.ErrEmptyCommand
	}
	if b.capture != nil && compose.GetToolCallID(ctx) != "" {
		// Captured: the answer is known at the end only (Execute's).
		r, err := b.Execute(ctx, req)
		if err != nil {
			return nil, err
		}
		return schema.StreamReaderFromArray([]*filesystem.ExecuteResponse{r}), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	st := &streamer{max: b.sb.MaxOutputBytes(), wake: make(chan struct{}, 1)}
	type result struct {
		r   sandbox.ExecuteResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := b.sb.Execute(ctx, req.Command, append(b.execOpts[:len(b.execOpts):len(b.execOpts)], sandbox.ExecOutput(st))...)
		done <- result{r, err}
	}()
	sr, sw := schema.Pipe[*filesystem.ExecuteResponse](16)
	go func() {
		defer sw.Close()
		defer cancel()
		var streamed strings.Builder
		closed, sent := false, false
		send := func(text string, beat bool) {
			if (text == "" && !beat) || closed {
				return
			}
			streamed.WriteString(text)
			sent = true
			if sw.Send(&filesystem.ExecuteResponse{Output: text}, nil) {
				closed = true
				cancel() // the reader is gone: kill the command
			}
		}
		beat := time.NewTicker(heartbeat)
		defer beat.Stop()
		for {
			select {
			case <-st.wake:
				send(st.take(false), false)
			case <-beat.C:
				if !sent {
					send("", true) // only a Send notices a closed reader
				}
				sent = false
			case res := <-done:
				send(st.take(true), false)
				if closed {
					return
				}
				if res.err != nil {
					sw.Send(nil, res.err)
					return
				}
				code := res.r.ExitCode
				sw.Send(&filesystem.ExecuteResponse{
					Output: tail(res.r, streamed.String()), ExitCode: &code, Truncated: res.r.Truncated,
				}, nil)
				return
			}
		}
	}()
	return sr, nil
}

// heartbeat is how often a silent stream sends an empty chunk.
const heartbeat = 500 * time.Millisecond

// tail is what Execute's Output r has after the output streamed: the
// truncation marker, the timeout line.
func tail(r sandbox.ExecuteResponse, streamed string) string {
	if rest, ok := strings.CutPrefix(r.Output, streamed); ok {
		return rest
	}
	// The stream's U+FFFD differ from Output's (a split run of invalid
	// bytes): find the markers.
	out := ""
	if r.TimedOut {
		if i := strings.LastIndex(r.Output, "Error: Command timed out after "); i >= 0 {
			out = r.Output[i:]
			if streamed != "" && !strings.HasSuffix(streamed, "\n") {
				out = "\n" + out
			}
		}
	} else if r.Truncated {
		if i := strings.LastIndex(r.Output, "\n\n... Output truncated at "); i >= 0 {
			out = r.Output[i:]
		}
	}
	return out
}

// streamer keeps the first max bytes written to it until they are taken.
type streamer struct {
	mu      sync.Mutex
	max     int
	seen    int64
	pending []byte
	wake    chan struct{} // a write is pending
}

func (s *streamer) Write(p []byte) (int, error) {
	s.mu.Lock()
	if room := int64(s.max) - s.seen; room > 0 {
		s.pending = append(s.pending, p[:min(room, int64(len(p)))]...)
	}
	s.seen += int64(len(p))
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// take returns the pending bytes as valid UTF-8. Before the end it keeps
// back a character cut by the write; at the end it drops one cut by the
// cap, as Execute does.
func (s *streamer) take(final bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.pending
	n := len(b)
	if !final || s.seen > int64(s.max) {
		n = len(trimPartialRune(b))
	}
	out := strings.ToValidUTF8(string(b[:n]), "\uFFFD")
	s.pending = append(s.pending[:0], b[n:]...)
	return out
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// BackgroundCommand is a command that ExecuteBackground started.
type BackgroundCommand struct {
	// LogPath is the file in the sandbox that receives the command's
	// stdout and stderr.
	LogPath string

	cancel context.CancelFunc
	done   chan struct{}
	resp   *filesystem.ExecuteResponse
	err    error
}

// ExecuteBackground starts req.Command with sh -c in the sandbox and
// returns without waiting for it. Eino's ExecuteRequest (v0.7.36) has no
// background flag, so Eino's tools never call this; it is for programs
// that drive the backend themselves. Until the sandbox has a process API,
// it runs as a command of the sandbox, in its working directory, with no
// timeout (WithExecOptions does not apply), its output appended to
// LogPath, a new file under /tmp/sandboxeino: read it with Read. It ends when it exits, on
// Stop, or when the sandbox closes; ending ctx does not stop it.
func (b *Backend) ExecuteBackground(ctx context.Context, req *filesystem.ExecuteRequest) (*BackgroundCommand, error) {
	if req == nil {
		return nil, errNilRequest
	}
	if req.Command == "" {
		return nil, sandbox.ErrEmptyCommand
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	logPath := "/tmp/sandboxeino/" + hex.EncodeToString(id) + ".log"
	if err := b.sb.Write(ctx, logPath, nil); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := b.sb.Command(runCtx, "exec >>\"$SANDBOXEINO_LOG\" 2>&1\n"+req.Command)
	c.Env = []string{"SANDBOXEINO_LOG=" + logPath}
	if err := c.Start(); err != nil {
		cancel()
		return nil, err
	}
	bc := &BackgroundCommand{LogPath: logPath, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(bc.done)
		defer cancel()
		err := c.Wait()
		var exitErr *sandbox.ExitError
		if c.ProcessState != nil && (err == nil || errors.As(err, &exitErr)) {
			code := c.ProcessState.ExitCode()
			bc.resp = &filesystem.ExecuteResponse{ExitCode: &code}
			return
		}
		bc.err = err
	}()
	return bc, nil
}

// Done is closed when the command has ended.
func (c *BackgroundCommand) Done() <-chan struct{} { return c.done }

// Wait waits for the command to end and returns its exit code (Output is
// empty: the output is in LogPath), or the error that ended it (Stop's is
// context.Canceled).
func (c *BackgroundCommand) Wait(ctx context.Context) (*filesystem.ExecuteResponse, error) {
	select {
	case <-c.done:
		return c.resp, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stop kills the command's process tree and waits for it to end.
func (c *BackgroundCommand) Stop() {
	c.cancel()
	<-c.done
}
