// Package sandboxtest makes sandboxes for the tests of this repository's
// modules, on the images of package testenv. Like net/http/httptest for
// net/http, it depends on the library it serves; the library must never
// import it.
package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

// New creates a sandbox on image, a test image that is never pulled, with
// opts after those. The test closes it at its end, and fails if that fails.
func New(t testing.TB, image string, opts ...sandbox.Option) *sandbox.DockerSandbox {
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
		if err := sb.Close(); err != nil {
			t.Errorf("sandboxtest: close: %v", err)
		}
	})
	return sb
}

// Base returns the options every test sandbox starts with: on Docker,
// never pull (the test images are local); on a relayed engine
// (testenv.Relayed), WithEngine of it.
func Base() []sandbox.Option {
	if e := testenv.Engine(); e != nil {
		return []sandbox.Option{sandbox.WithEngine(e)}
	}
	return []sandbox.Option{sandbox.WithPullPolicy(sandbox.PullNever)}
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
func Busybox(t testing.TB) *sandbox.DockerSandbox {
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
