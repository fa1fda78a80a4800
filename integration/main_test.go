package integration

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// images are the test images every file test runs on.
var images = []string{testenv.BusyboxImage, testenv.DebianImage}

// secure says whether the suite runs every sandbox under
// sandbox.WithSecureProfile (DOCKERSANDBOX_TEST_SECURE=1): the whole suite
// must pass both ways.
var secure = os.Getenv("DOCKERSANDBOX_TEST_SECURE") == "1"

// profile puts the secure profile before opts when the suite runs under it
// (opts may override the profile's defaults).
func profile(opts []sandbox.Option) []sandbox.Option {
	if secure {
		return append([]sandbox.Option{sandbox.WithSecureProfile()}, opts...)
	}
	return opts
}

// sandboxOptions returns the options of a test sandbox on image: the test
// image, never pulled, then profile(opts).
func sandboxOptions(image string, opts ...sandbox.Option) []sandbox.Option {
	return baseOptions(image, profile(opts)...)
}

// baseOptions returns the options of a test sandbox on image without the
// secure profile: the engine's base (sandboxtest.Base: never pull on
// Docker, the relayed engine under DOCKERSANDBOX_TEST_ENGINE), the image,
// then opts.
func baseOptions(image string, opts ...sandbox.Option) []sandbox.Option {
	return append(append(sandboxtest.Base(), sandbox.WithImage(image)), opts...)
}

// onEngine puts the options choosing the engine the tests run on before
// opts, for Attach, List and Prune (none on Docker).
func onEngine(opts ...sandbox.Option) []sandbox.Option {
	return append(sandboxtest.Engine(), opts...)
}

// newSandbox creates a sandbox on image that the test closes at its end.
func newSandbox(t testing.TB, image string, opts ...sandbox.Option) *sandbox.Sandbox {
	t.Helper()
	return sandboxtest.New(t, image, profile(opts)...)
}

// testCtx returns a context that ends with the test, bounded to three
// minutes, for a test of the engine: it skips t when none answers
// (testenv.MustHaveEngine). The bound is a net under a hang, not a bound
// a test asserts: a minute was too short for TestScopedListAndPrune's
// sandboxes, lists and prunes on Podman beside another lane.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	testenv.MustHaveEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func uniq(s []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func sleepBriefly() { time.Sleep(10 * time.Millisecond) }
