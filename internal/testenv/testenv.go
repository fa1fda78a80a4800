// Package testenv provides the Docker test environment shared by the
// integration tests of this module: a connected client, locally built test
// images (no registry is ever contacted) and leak checking of the containers
// that the library creates.
//
// Integration test packages use it as
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

const (
	// BusyboxImage is a tiny image built from the host's static busybox.
	// It has /bin/sh, /usr/bin/env, a user "sandbox" (uid 1000) with home
	// /home/sandbox, and "nobody" (uid 65534).
	BusyboxImage = "dockersandbox-test/busybox:1"
	// DebianImage is a Debian bookworm minbase image with python3 and a user
	// "sandbox" (uid 1000) with home /home/sandbox.
	DebianImage = "dockersandbox-test/debian:bookworm"

	// LabelSandbox is the label the library puts on every container it
	// creates (value "true").
	LabelSandbox = "com.dockersandbox.sandbox"
	// LabelOwner is the label holding the creating process, as "<hostname>:<pid>".
	LabelOwner = "com.dockersandbox.owner"
	// LabelSnapshot marks a snapshot image the library made (value "true").
	LabelSnapshot = "com.dockersandbox.snapshot"
)

// RequireEngineVar is the environment variable that makes a missing
// container engine a failure of the test run ("1"; .ci/run sets it).
// Without it, Main runs the tests with no engine and MustHaveEngine skips
// those that need one.
const RequireEngineVar = "DOCKERSANDBOX_TEST_REQUIRE_ENGINE"

// noEngine says why no engine answered Main's ping; "" when one did.
var noEngine string

// MustHaveEngine skips tb, with one line saying how to run it, when no
// container engine answered at the start of the test run (see Main). A
// test that creates sandboxes or talks to a daemon calls it first; the
// helpers that make sandboxes (package sandboxtest, Client) do.
func MustHaveEngine(tb testing.TB) {
	tb.Helper()
	if noEngine != "" {
		tb.Skipf("needs a container engine (%s); start one with scripts/docker-up.sh, then run the tests again", noEngine)
	}
}

// ensureTimeout bounds EnsureImages in Main (debootstrap is the slow part).
const ensureTimeout = 10 * time.Minute

// NewClient returns a moby client configured from the environment
// (DOCKER_HOST etc.) that has successfully pinged the daemon. API version
// negotiation is on by default in the client.
func NewClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("testenv: creating docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("testenv: docker daemon at %s is not reachable (these tests need a running Docker engine; start dockerd or run .ci/run): %w", cli.DaemonHost(), err)
	}
	return cli, nil
}

// Client returns a pinged client for the daemon configured by the
// environment and closes it when tb ends. It fails tb when the daemon is
// unreachable; on a relayed engine (Relayed), it skips tb: a test that
// reaches Docker directly is Docker's.
func Client(tb testing.TB) *client.Client {
	tb.Helper()
	MustHaveEngine(tb)
	if Relayed() {
		RequireDocker(tb, "the test reaches the Docker daemon directly, behind the engine")
	}
	cli, err := NewClient(context.Background())
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { cli.Close() })
	return cli
}

// Owner returns the owner label value the library puts on the containers
// created by the current process: "<hostname>:<pid>".
func Owner() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// Leaked returns the IDs of all containers (in any state) labelled with
// LabelOwner=owner.
func Leaked(ctx context.Context, cli *client.Client, owner string) ([]string, error) {
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelOwner+"="+owner),
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: listing containers of owner %q: %w", owner, err)
	}
	ids := make([]string, 0, len(res.Items))
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// LeakedSnapshots returns the IDs of the snapshot images (LabelSnapshot)
// labelled with LabelOwner=owner, the untagged ones of a Snapshot that
// failed midway included. The owner is matched here, as the library
// matches it, not by a second label filter: on Podman 4.3 the leak check
// of one test process (internal/enginerelay's) listed and removed a
// snapshot of another (the root package's, running beside it).
func LeakedSnapshots(ctx context.Context, cli *client.Client, owner string) ([]string, error) {
	res, err := cli.ImageList(ctx, client.ImageListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelSnapshot+"=true"),
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: listing snapshot images of owner %q: %w", owner, err)
	}
	ids := make([]string, 0, len(res.Items))
	for _, img := range res.Items {
		if img.Labels[LabelSnapshot] == "true" && img.Labels[LabelOwner] == owner {
			ids = append(ids, img.ID)
		}
	}
	return ids, nil
}

// Main is a TestMain for integration test packages: it connects to the
// daemon and ensures the test images exist (exiting 1 if that fails), runs
// the tests, then force-removes every container this process left behind and
// exits non-zero if there was any, even when all tests passed. When no
// daemon answers, it runs the tests anyway and MustHaveEngine skips those
// that need one, unless RequireEngineVar is set: then it exits 1. On a
// relayed engine (EngineVar), it checks the relay and the leaks there.
func Main(m *testing.M) {
	os.Exit(runMain(m))
}

// skipExamples adds the examples to the -test.skip pattern: an example
// cannot skip itself, and those of these packages run sandboxes.
func skipExamples() {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.skip")
	if f == nil {
		return
	}
	switch v := f.Value.String(); {
	case v == "":
		_ = f.Value.Set("^Example")
	case !strings.Contains(v, "/"): // a pattern of one level only
		_ = f.Value.Set(v + "|^Example")
	}
}

// daemonHost is the daemon address of the environment, as the client
// reads it.
func daemonHost() string {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return os.Getenv("DOCKER_HOST")
	}
	defer cli.Close()
	return cli.DaemonHost()
}

func runMain(m *testing.M) int {
	if Relayed() {
		return runRelayed(m)
	}
	ctx := context.Background()
	cli, err := NewClient(ctx)
	if err != nil {
		if os.Getenv(RequireEngineVar) == "1" {
			fmt.Fprintf(os.Stderr, "%v\n(%s=1: a missing engine fails the run)\n", err, RequireEngineVar)
			return 1
		}
		noEngine = "none answers at " + daemonHost()
		fmt.Fprintf(os.Stderr, "testenv: %s: the tests and examples that need a container engine are skipped "+
			"(start one with scripts/docker-up.sh, or set DOCKER_HOST; %s=1 makes this a failure)\n", noEngine, RequireEngineVar)
		skipExamples()
		return m.Run()
	}
	defer cli.Close()

	ectx, cancel := context.WithTimeout(ctx, ensureTimeout)
	err = EnsureImages(ectx, cli)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: preparing test images: %v\n", err)
		return 1
	}

	code := m.Run()

	if err := checkLeaks(ctx, cli, Owner()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// checkLeaks force-removes the containers of owner, then its snapshot
// images (which the engine keeps while a container uses them), and reports
// them as an error.
func checkLeaks(ctx context.Context, cli *client.Client, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ids, err := Leaked(ctx, cli, owner)
	if err != nil {
		return err
	}
	var msg string
	if len(ids) > 0 {
		msg = fmt.Sprintf("testenv: FAIL: %d container(s) leaked by this test process (owner %s):", len(ids), owner)
		for _, id := range ids {
			msg += "\n  " + id
			_, rerr := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			msg += removal(rerr)
		}
	}
	imgs, err := LeakedSnapshots(ctx, cli, owner)
	if err != nil {
		return errors.Join(leakErr(msg), err)
	}
	if len(imgs) > 0 {
		if msg != "" {
			msg += "\n"
		}
		msg += fmt.Sprintf("testenv: FAIL: %d snapshot image(s) leaked by this test process (owner %s):", len(imgs), owner)
		for _, id := range imgs {
			msg += "\n  " + id
			_, rerr := cli.ImageRemove(ctx, id, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			if cerrdefs.IsNotFound(rerr) {
				rerr = nil // went with its child
			}
			msg += removal(rerr)
		}
	}
	return leakErr(msg)
}

func removal(err error) string {
	if err != nil {
		return fmt.Sprintf(" (removal failed: %v)", err)
	}
	return " (removed)"
}

func leakErr(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// Podman reports whether the tests run against Podman's Docker-compatible
// API, for the few assertions that differ (documented in the README).
func Podman(tb testing.TB) bool {
	tb.Helper()
	if Relayed() {
		return false
	}
	v, err := Client(tb).ServerVersion(context.Background(), client.ServerVersionOptions{})
	if err != nil {
		tb.Fatalf("testenv: server version: %v", err)
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true
		}
	}
	return false
}

// LocalDaemon reports whether the daemon of the environment runs on this
// machine as the library sees it (on Linux, reached on a unix socket, not
// through the relay): where sandboxes share a port socket with their
// container.
func LocalDaemon() bool {
	h := os.Getenv("DOCKER_HOST")
	return !Relayed() && runtime.GOOS == "linux" && (h == "" || strings.HasPrefix(h, "unix://"))
}
