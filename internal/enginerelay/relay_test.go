package enginerelay_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/engine/enginetest"
	"github.com/dockersandbox/sandbox/internal/enginerelay"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// relay serves e on a unix socket for the test and returns the client.
func relay(t *testing.T, e engine.Engine) engine.Engine {
	t.Helper()
	dir, err := os.MkdirTemp("", "relay")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- enginerelay.Serve(ctx, l, e) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	r, err := enginerelay.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dockerEngine(t *testing.T) engine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := sandbox.DockerEngine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestConformance: the relay over the Docker engine passes the suite
// every engine passes, as the Docker engine does.
func TestConformance(t *testing.T) {
	testenv.MustHaveEngine(t)
	d := dockerEngine(t)
	r := relay(t, d)
	if r.Name() != d.Name() {
		t.Errorf("Name %q, want the served engine's %q", r.Name(), d.Name())
	}
	_, dp := d.(engine.Pauser)
	_, rp := r.(engine.Pauser)
	_, ds := d.(engine.Stopper)
	_, rs := r.(engine.Stopper)
	if dp != rp || ds != rs {
		t.Errorf("relay Pauser %v Stopper %v, served engine's %v %v", rp, rs, dp, ds)
	}
	if _, ok := r.(engine.Meter); !ok {
		t.Error("relay is not an engine.Meter")
	}
	for _, image := range []string{testenv.BusyboxImage, testenv.DebianImage} {
		t.Run(image, func(t *testing.T) { enginetest.Run(t, r, image) })
	}
}

// plain hides the Docker engine's Pauser, Stopper and Meter.
type plain struct{ engine.Engine }

// TestOptionalInterfaces: an engine without Pauser or Stopper is relayed
// without them, and its errors keep their sentinels; the relay is a Meter
// whatever it serves, whose Usage is errors.ErrUnsupported when the
// served engine is not one.
func TestOptionalInterfaces(t *testing.T) {
	testenv.MustHaveEngine(t)
	r := relay(t, plain{dockerEngine(t)})
	if _, ok := r.(engine.Pauser); ok {
		t.Error("relay of an engine without Pauser is a Pauser")
	}
	if _, ok := r.(engine.Stopper); ok {
		t.Error("relay of an engine without Stopper is a Stopper")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.Inspect(ctx, "dockersandbox-no-such-container")
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Inspect of a missing sandbox: %v, want ErrNotFound", err)
	}
	_, err = r.Exec(ctx, "dockersandbox-no-such-container", []string{"true"}, "")
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Exec in a missing sandbox: %v, want ErrNotFound", err)
	}
	m, ok := r.(engine.Meter)
	if !ok {
		t.Fatal("relay of an engine without Meter is not a Meter")
	}
	if _, err := m.Usage(ctx, "dockersandbox-no-such-container"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Usage relayed from an engine without Meter: %v, want errors.ErrUnsupported", err)
	}
	_, err = relay(t, dockerEngine(t)).(engine.Meter).Usage(ctx, "dockersandbox-no-such-container")
	if !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Usage of a missing sandbox through the relay: %v, want ErrNotFound", err)
	}
}

// TestServerGone: calls to a relay whose server stopped fail with
// ErrUnreachable, promptly.
func TestServerGone(t *testing.T) {
	testenv.MustHaveEngine(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	if len(sock) > 100 {
		t.Skip("temp dir path too long for a unix socket")
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- enginerelay.Serve(ctx, l, plain{dockerEngine(t)}) }()
	r, err := enginerelay.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if _, err := r.List(cctx, nil); !errors.Is(err, engine.ErrUnreachable) {
		t.Errorf("List after the server stopped: %v, want ErrUnreachable", err)
	}
}
