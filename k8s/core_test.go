package k8s_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/enginerelay"
	"github.com/dockersandbox/sandbox/k8s"
)

// The core suite on Kubernetes (opt-in): DOCKERSANDBOX_TEST_K8S_CORE=1
// runs the core module's tests on this engine, served through
// internal/enginerelay. DOCKERSANDBOX_TEST_K8S_CORE_PKGS lists the core
// packages (default "./integration", the root package's black-box tests:
// the root keeps only Examples and engine-free tests),
// DOCKERSANDBOX_TEST_K8S_CORE_ARGS adds go test flags (e.g. "-short",
// "-run TestX", "-race").
const (
	envCore     = "DOCKERSANDBOX_TEST_K8S_CORE"
	envCorePkgs = "DOCKERSANDBOX_TEST_K8S_CORE_PKGS"
	envCoreArgs = "DOCKERSANDBOX_TEST_K8S_CORE_ARGS"
)

// TestCoreSuite runs `go test` of the core module with
// DOCKERSANDBOX_TEST_ENGINE=relay:<socket>, so that its sandboxes are pods
// of this engine; Docker is out of its reach (DOCKER_HOST points nowhere),
// so a test that would fall back to Docker fails instead of passing
// there. It fails if the suite fails.
func TestCoreSuite(t *testing.T) {
	if os.Getenv(envCore) != "1" {
		t.Skipf("the core suite on Kubernetes is opt-in: %s=1 (with %s)", envCore, envKubeconfig)
	}
	e := testEngine(t, k8s.WithNetworkNoneAccepted())
	dir, err := os.MkdirTemp("", "k8score") // t.TempDir may be too long for a socket's path
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
	served := make(chan error, 1)
	go func() { served <- enginerelay.Serve(ctx, l, e) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("enginerelay.Serve: %v", err)
		}
	})

	args := []string{"test", "-count=1", "-p", "1", "-parallel", "2", "-timeout", "120m", "-skip", "^Example"}
	args = append(args, strings.Fields(os.Getenv(envCoreArgs))...)
	pkgs := strings.Fields(os.Getenv(envCorePkgs))
	if len(pkgs) == 0 {
		pkgs = []string{"./integration"}
	}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = ".." // the core module
	cmd.Env = append(os.Environ(),
		"DOCKERSANDBOX_TEST_ENGINE=relay:"+sock,
		"DOCKER_HOST=unix://"+filepath.Join(dir, "no-docker-here.sock"),
	)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	t.Logf("go %s (in the core module, engine %s at %s)", strings.Join(args, " "), e.Name(), sock)
	err = cmd.Run()
	t.Logf("the core suite on Kubernetes took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("the core suite on Kubernetes failed: %v", err)
	}
}
