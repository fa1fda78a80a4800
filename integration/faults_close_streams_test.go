package integration

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldEngine relays an engine whose exec streams do not end when the
// engine ends them: a read past the process's output waits until the
// library closes the stream. Docker 20.10 under gVisor sometimes left the
// attach stream of a container removed while paused open so (stop 33's
// CI: TestClosePaused's command outlived its Close by three minutes).
type heldEngine struct{ engine.Engine }

func (h heldEngine) Pause(ctx context.Context, id string) error {
	return h.Engine.(engine.Pauser).Pause(ctx, id)
}

func (h heldEngine) Unpause(ctx context.Context, id string) error {
	return h.Engine.(engine.Pauser).Unpause(ctx, id)
}

func (h heldEngine) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	st, err := h.Engine.Exec(ctx, id, argv, user)
	if err != nil {
		return nil, err
	}
	return &heldStream{Stream: st, closed: make(chan struct{})}, nil
}

type heldStream struct {
	engine.Stream
	once   sync.Once
	closed chan struct{}
}

func (s *heldStream) Stdout() io.Reader { return heldReader{s.Stream.Stdout(), s.closed} }
func (s *heldStream) Stderr() io.Reader { return heldReader{s.Stream.Stderr(), s.closed} }

func (s *heldStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.Stream.Close()
}

type heldReader struct {
	r      io.Reader
	closed <-chan struct{}
}

func (h heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if n == 0 && err != nil {
		<-h.closed
	}
	return n, err
}

// TestCloseEndsCalls: Close ends the calls in flight on the handle, on the
// shared channel and on execs of their own, with ErrClosed as soon as it
// returns, whatever the engine does with the streams of the container
// (heldEngine keeps them open), and whether the sandbox was running or
// paused (a frozen helper's silence is no sign of its end). Detach ends
// those on the shared channel; a Cmd runs on to its end.
func TestCloseEndsCalls(t *testing.T) {
	t.Parallel()
	base := testEngine(t)
	for _, tc := range []struct {
		name          string
		pause, detach bool
	}{{name: "running"}, {name: "paused", pause: true}, {name: "detached", detach: true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.pause {
				requirePauser(t)
			}
			ctx := testCtx(t)
			sb, err := sandbox.New(ctx, sandbox.WithEngine(heldEngine{base}), sandbox.WithImage(testenv.BusyboxImage))
			require.NoError(t, err)
			id := sb.ID()
			defer func() { _ = removeBox(t, id) }()
			// Execute's output is the library's: it runs on the shared
			// channel; a Cmd with the caller's writers, on an exec of its own.
			shared := make(chan error, 1)
			go func() {
				_, err := sb.Execute(ctx, "touch /tmp/a; while [ ! -e /tmp/stop ]; do sleep 0.02; done")
				shared <- err
			}()
			own, _ := counter(t, sb, "/tmp/b", "/tmp/stop", false)
			require.Eventually(t, func() bool {
				out, err := sb.Execute(ctx, "[ -e /tmp/a ] && [ -s /tmp/b ] && echo both")
				return err == nil && strings.TrimSpace(out.Output) == "both"
			}, time.Minute, 50*time.Millisecond, "both commands run")
			if tc.pause {
				require.NoError(t, sb.Pause(ctx))
			}
			if tc.detach {
				sb.Detach()
			} else {
				require.NoError(t, sb.Close())
			}
			ownDone := make(chan error, 1)
			go func() { ownDone <- own.Wait() }()
			start := time.Now()
			ended := map[string]chan error{"shared channel": shared, "exec of its own": ownDone}
			if tc.detach {
				// A Cmd runs on to its end: it ends when told to.
				delete(ended, "exec of its own")
				other, err := sandbox.Attach(ctx, id, sandbox.WithEngine(heldEngine{base}))
				require.NoError(t, err)
				mustSh(t, other, "touch /tmp/stop")
				other.Detach()
				select {
				case err := <-ownDone:
					assert.NoError(t, err, "a Cmd from Command outlives Detach")
				case <-time.After(time.Minute):
					t.Fatal("the Cmd did not end when told to, after Detach")
				}
			}
			for name, done := range ended {
				select {
				case err := <-done:
					assert.ErrorIs(t, err, sandbox.ErrClosed, "%s: %v", name, err)
					t.Logf("%s: returned %v after the handle's end", name, time.Since(start))
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: still waits 5 s after the handle's end", name)
				}
			}
			if tc.detach {
				info, err := inspectBox(t, id)
				require.NoError(t, err)
				assert.Equal(t, engine.StateRunning, info.State, "Detach leaves the sandbox running")
			} else {
				_, err := inspectBox(t, id)
				assert.True(t, errors.Is(err, engine.ErrNotFound), "Close removed it: %v", err)
			}
		})
	}
}

// lingerEngine relays an engine whose exec streams, once the library
// closes them, still hold the engine's connection: the process in the
// sandbox never learns that the library hung up (its stdin stays open),
// as Podman 4.3 under load kept an exec session running. Close releases
// them at the test's end.
type lingerEngine struct {
	engine.Engine
	mu      sync.Mutex
	streams []engine.Stream
}

func (l *lingerEngine) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	st, err := l.Engine.Exec(ctx, id, argv, user)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.streams = append(l.streams, st)
	l.mu.Unlock()
	ls := &lingerStream{Stream: st, closed: make(chan struct{})}
	ls.out, ls.outW = io.Pipe()
	ls.errR, ls.errW = io.Pipe()
	go func() { _, err := io.Copy(ls.outW, st.Stdout()); ls.outW.CloseWithError(err) }()
	go func() { _, err := io.Copy(ls.errW, st.Stderr()); ls.errW.CloseWithError(err) }()
	return ls, nil
}

// release closes the engine's streams.
func (l *lingerEngine) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range l.streams {
		st.Close()
	}
}

type lingerStream struct {
	engine.Stream
	once       sync.Once
	closed     chan struct{}
	out, errR  *io.PipeReader
	outW, errW *io.PipeWriter
}

func (s *lingerStream) Stdout() io.Reader { return s.out }
func (s *lingerStream) Stderr() io.Reader { return s.errR }

func (s *lingerStream) Write(p []byte) (int, error) {
	select {
	case <-s.closed:
		return 0, io.ErrClosedPipe
	default:
		return s.Stream.Write(p)
	}
}

func (s *lingerStream) CloseWrite() error { return nil } // the process's stdin stays open

func (s *lingerStream) Close() error {
	s.once.Do(func() {
		close(s.closed)
		s.out.CloseWithError(io.ErrClosedPipe)
		s.errR.CloseWithError(io.ErrClosedPipe)
	})
	return nil
}
