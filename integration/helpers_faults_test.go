//go:build linux

package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
)

// noHang bounds every call that must fail rather than hang: far above what
// any of them takes, far below the test timeout.
const noHang = 30 * time.Second

// signalWriter closes ready at the first write of a line containing want.
type signalWriter struct {
	once  sync.Once
	want  string
	ready chan struct{}
	mu    sync.Mutex
	buf   strings.Builder
}

func newSignalWriter(want string) *signalWriter {
	return &signalWriter{want: want, ready: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// text returns what was written so far.
func (w *signalWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startLong starts a long command in the background and waits until it
// runs; its result arrives on the returned channel.
func startLong(t *testing.T, sb *sandbox.Sandbox) <-chan error {
	t.Helper()
	w := newSignalWriter("started")
	done := make(chan error, 1)
	go func() {
		_, err := sb.Execute(context.Background(), "echo started; sleep 1000", sandbox.ExecTimeout(0), sandbox.ExecOutput(w))
		done <- err
	}()
	select {
	case <-w.ready:
	case err := <-done:
		t.Fatalf("the long command ended at once: %v", err)
	case <-time.After(noHang):
		t.Fatal("the long command did not start")
	}
	return done
}

// within waits for a result from ch, failing the test after noHang.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(noHang):
		t.Fatalf("%s: no answer within %v", what, noHang)
		panic("unreachable")
	}
}

// async runs fn in a goroutine and returns its error on a channel.
func async(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// waitGone waits, at most noHang, until the container id no longer exists.
// On another engine than Docker, an ended sandbox counts: nothing removes a
// pod whose PID 1 ended (no controller; Prune does, as the k8s README
// says), so the test removes it then.
func waitGone(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(noHang)
	if testenv.Relayed() {
		for {
			info, err := inspectBox(t, id)
			if errors.Is(err, engine.ErrNotFound) {
				return
			}
			require.NoError(t, err)
			if info.State != engine.StateRunning {
				require.NoError(t, removeBox(t, id), "the ended sandbox %s (%s)", id, info.State)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("sandbox %s still runs %v after its owner died", id, noHang)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	cli := testenv.Client(t)
	for {
		_, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) || err != nil && strings.Contains(err.Error(), "no such container") { // Podman, mid-removal
			return
		}
		require.NoError(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("container %s still exists %v after its owner died", id, noHang)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func running(t *testing.T, id string) bool {
	t.Helper()
	info, err := inspectBox(t, id)
	require.NoError(t, err)
	return info.State == engine.StateRunning
}

// outcome is what a function returned.
type outcome[T any] struct {
	v   T
	err error
}

// async2 runs fn in a goroutine and returns its results on a channel.
func async2[T any](fn func() (T, error)) <-chan outcome[T] {
	ch := make(chan outcome[T], 1)
	go func() {
		v, err := fn()
		ch <- outcome[T]{v, err}
	}()
	return ch
}

// engineStallSlow is how long an engine round trip may take before the
// engine counts as stalled here (the library waits 2 s: a test's bound
// gives the engine the benefit of the doubt).
const engineStallSlow = time.Second

// engineStalls measures the engine's own stalls while the test runs: it
// asks the engine something trivial every quarter second, and the returned
// func is the sum, over the answers slower than engineStallSlow, of the
// time each took (an answer still awaited counts once that slow). The
// library waits out the engine's stalls (a helper's frames wait in the
// daemon), so a bound on a call holds for the time the engine answers: a
// test adds the stalls during the call to its bound. On two loaded cores
// dockerd once took 12 s to answer a ping.
func engineStalls(t *testing.T) func() time.Duration {
	ask := func(ctx context.Context) {
		_, _ = testenv.Engine().Inspect(ctx, "dsb-stall-probe-none")
	}
	if testenv.Engine() == nil {
		cli := testenv.Client(t)
		ask = func(ctx context.Context) { _, _ = cli.Ping(ctx, client.PingOptions{}) }
	}
	var mu sync.Mutex
	var total time.Duration
	var asked time.Time // the question in flight, if any
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mu.Lock()
			asked = time.Now()
			mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			ask(ctx)
			cancel()
			mu.Lock()
			if took := time.Since(asked); took > engineStallSlow {
				total += took
			}
			asked = time.Time{}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if !asked.IsZero() {
			if took := time.Since(asked); took > engineStallSlow {
				return total + took
			}
		}
		return total
	}
}
