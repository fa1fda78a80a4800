package k8s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dockersandbox/sandbox/engine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// ErrStreamClosed is what reads and writes of a Stream return after its
// Close.
var ErrStreamClosed = errors.New("k8s: exec stream closed")

// Exec starts argv in the sandbox container of the pod named id and
// returns its stdin, stdout and stderr as a stream: client-go's SPDY
// remotecommand, falling back to WebSocket when the server (or an HTTPS
// proxy) refuses the upgrade, and keeping to WebSocket after that (see
// Engine). ctx bounds the start (the pod's lookup); the stream lasts until
// the process ends or Close. A missing pod is engine.ErrNotFound; one not
// running, engine.ErrNotRunning. A pod's processes all run as its user:
// user must be "" or the sandbox's own, else the error wraps
// errors.ErrUnsupported. An error of the connection itself (the upgrade
// refused, the pod gone meanwhile) comes out of the Stdout reader.
func (e *Engine) Exec(ctx context.Context, id string, argv []string, user string) (engine.Stream, error) {
	s, err := e.exec(ctx, id, user, func(*corev1.Pod) []string { return argv })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// exec is Exec of the command argvOf returns for the pod.
func (e *Engine) exec(ctx context.Context, id, user string, argvOf func(*corev1.Pod) []string) (*stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := e.cs.CoreV1().Pods(e.opts.namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("k8s: exec in %s: %w", id, mapErr(ctx, err))
	}
	if st := stateOf(p); st != engine.StateRunning {
		return nil, fmt.Errorf("k8s: exec in %s: %w (%s)", id, engine.ErrNotRunning, st)
	}
	argv := argvOf(p)
	if len(argv) == 0 {
		return nil, fmt.Errorf("k8s: exec: no command")
	}
	if user != "" && user != p.Annotations[annUser] {
		return nil, fmt.Errorf("k8s: exec as %q in %s: a pod's processes run as its user (%q): %w", user, id, p.Annotations[annUser], errors.ErrUnsupported)
	}
	url := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.opts.namespace).Name(id).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: ContainerName, Command: argv, Stdin: true, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, "GET", url.String())
	if err != nil {
		return nil, fmt.Errorf("k8s: exec: %w", err)
	}
	if e.noSPDY.Load() {
		return startStream(ws), nil
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", url)
	if err != nil {
		return nil, fmt.Errorf("k8s: exec: %w", err)
	}
	ex, err := remotecommand.NewFallbackExecutor(spdy, ws, func(err error) bool {
		refused := httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		if refused {
			e.noSPDY.Store(true)
		}
		return refused
	})
	if err != nil {
		return nil, fmt.Errorf("k8s: exec: %w", err)
	}
	return startStream(ex), nil
}

// stream is a running exec: pipes between the caller and remotecommand.
type stream struct {
	inR, outR, errR *io.PipeReader
	inW, outW, errW *io.PipeWriter
	cancel          context.CancelFunc
	done            chan struct{}
	err             error // the stream's end: nil, a utilexec.CodeExitError, or another error
	closeOnce       sync.Once
}

func startStream(ex remotecommand.Executor) *stream {
	s := &stream{done: make(chan struct{})}
	s.inR, s.inW = io.Pipe()
	s.outR, s.outW = io.Pipe()
	s.errR, s.errW = io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.inR, Stdout: s.outW, Stderr: s.errW})
		s.err = err
		var exit utilexec.CodeExitError
		if err == nil || errors.As(err, &exit) || ctx.Err() != nil {
			err = nil // readers see EOF; the exit status is wait's
		} else {
			err = mapErr(context.Background(), err)
		}
		s.outW.CloseWithError(err)
		s.errW.CloseWithError(err)
		s.inR.CloseWithError(ErrStreamClosed)
		close(s.done)
		cancel()
	}()
	return s
}

// Write writes to the process's stdin.
func (s *stream) Write(p []byte) (int, error) { return s.inW.Write(p) }

// CloseWrite ends the process's stdin.
func (s *stream) CloseWrite() error { return s.inW.Close() }

// Stdout is the process's standard output.
func (s *stream) Stdout() io.Reader { return s.outR }

// Stderr is the process's standard error.
func (s *stream) Stderr() io.Reader { return s.errR }

// Close ends the stream at once: blocked reads and writes return
// ErrStreamClosed; the connection is closed, and the process sees its
// stdin end.
func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.inW.CloseWithError(ErrStreamClosed)
		s.outR.CloseWithError(ErrStreamClosed)
		s.errR.CloseWithError(ErrStreamClosed)
	})
	return nil
}

// wait waits for the process to end (within ctx) and returns its exit
// status, or the stream's error.
func (s *stream) wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		s.Close()
		return -1, ctx.Err()
	}
	var exit utilexec.CodeExitError
	switch {
	case s.err == nil:
		return 0, nil
	case errors.As(s.err, &exit):
		return exit.ExitStatus(), nil
	}
	return -1, mapErr(ctx, s.err)
}
