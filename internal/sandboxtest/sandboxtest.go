// Package sandboxtest makes sandboxes for the tests of this repository's
// modules, on the images of package testenv. Like net/http/httptest for
// net/http, it depends on the library it serves; the library must never
// import it.
package sandboxtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

// New creates a sandbox on image, a test image that is never pulled, with
// opts after those. The test closes it at its end, and fails if that fails.
func New(t testing.TB, image string, opts ...sandbox.Option) *sandbox.Sandbox {
	t.Helper()
	testenv.MustHaveEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := append(Base(), sandbox.WithImage(image))
	sb, err := sandbox.New(ctx, append(base, opts...)...)
	if err != nil {
		t.Fatalf("sandboxtest: %v", err)
	}
	t.Cleanup(func() {
		if err := CloseAgain(sb, sb.Close()); err != nil {
			t.Errorf("sandboxtest: close: %v", err)
		}
	})
	return sb
}

// closeRetries bounds how long CloseAgain calls Close again.
const closeRetries = 3 * time.Minute

// CloseAgain returns err, the error of a Close of sb, unless it is the
// daemon's not finishing within Close's bound (ErrDaemonUnreachable,
// ErrStillRemoving, a removal request that timed out: seen at a load of
// 50, when the daemon stalled for over 30 s): then it calls Close again,
// as Close's doc says a caller may, until one succeeds or closeRetries
// passed, and returns the last error.
func CloseAgain(sb *sandbox.Sandbox, err error) error {
	for deadline := time.Now().Add(closeRetries); err != nil && time.Now().Before(deadline) &&
		(errors.Is(err, sandbox.ErrDaemonUnreachable) || errors.Is(err, sandbox.ErrStillRemoving) ||
			errors.Is(err, context.DeadlineExceeded)); {
		time.Sleep(time.Second)
		err = sb.Close()
	}
	return err
}

// Base returns the options every test sandbox starts with: on Docker,
// never pull (the test images are local), and the OCI runtime
// DOCKERSANDBOX_TEST_RUNTIME names, if any ("runsc": gVisor); on a
// relayed engine (testenv.Relayed), WithEngine of it.
func Base() []sandbox.Option {
	if e := testenv.Engine(); e != nil {
		return []sandbox.Option{sandbox.WithEngine(e)}
	}
	opts := []sandbox.Option{sandbox.WithPullPolicy(sandbox.PullNever)}
	if rt := os.Getenv("DOCKERSANDBOX_TEST_RUNTIME"); rt != "" {
		opts = append(opts, sandbox.WithRuntime(rt))
	}
	return opts
}

// GVisor reports whether the test sandboxes run under gVisor
// (DOCKERSANDBOX_TEST_RUNTIME=runsc), for the tests whose outcome is the
// runtime's (docs/engines.md lists what differs).
func GVisor() bool {
	return testenv.Engine() == nil && strings.Contains(os.Getenv("DOCKERSANDBOX_TEST_RUNTIME"), "runsc")
}

// Engine returns the options that choose the engine the tests run on, for
// Attach, List, Prune: none on Docker (the environment's), WithEngine of
// the relayed engine otherwise.
func Engine() []sandbox.Option {
	if e := testenv.Engine(); e != nil {
		return []sandbox.Option{sandbox.WithEngine(e)}
	}
	return nil
}

// Busybox is New on the busybox image without network, for a test that
// needs a sandbox, not a particular one.
func Busybox(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	return New(t, testenv.BusyboxImage, sandbox.WithNetworkMode("none"))
}

// Context returns a context that ends with the test, after two minutes at
// the most, for a test of the engine: it skips t when none answers
// (testenv.MustHaveEngine).
func Context(t testing.TB) context.Context {
	t.Helper()
	testenv.MustHaveEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
