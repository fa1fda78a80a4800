package k8s_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/k8s"
	corev1 "k8s.io/api/core/v1"
)

// The cluster the tests run against: DOCKERSANDBOX_TEST_KUBECONFIG names
// its kubeconfig (scripts/k8s/up.sh prints it; scripts/k8s/load-images.sh
// imports the helper image the engine expects). Without it every test
// skips.
const envKubeconfig = "DOCKERSANDBOX_TEST_KUBECONFIG"

// Test images: built by `go run ./internal/testenv/cmd/testimages` and
// imported into the cluster by scripts/k8s/up.sh.
const (
	busybox = "dockersandbox-test/busybox:1"
	debian  = "dockersandbox-test/debian:bookworm"
)

// testEngine returns an engine on the test cluster's namespace (default,
// or DOCKERSANDBOX_TEST_K8S_NAMESPACE), with images never pulled: nothing
// leaves the machine; pids limits are accepted (scripts/k8s/up.sh sets the
// kubelet's podPidsLimit).
func testEngine(t testing.TB, opts ...k8s.Option) *k8s.Engine {
	t.Helper()
	return strictEngine(t, append([]k8s.Option{k8s.WithPidsLimitAccepted()}, opts...)...)
}

// strictEngine is testEngine without WithPidsLimitAccepted.
func strictEngine(t testing.TB, opts ...k8s.Option) *k8s.Engine {
	t.Helper()
	path := os.Getenv(envKubeconfig)
	if path == "" {
		t.Skipf("no Kubernetes cluster: set %s to a kubeconfig (scripts/k8s/up.sh prints one)", envKubeconfig)
	}
	cfg, err := k8s.Kubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ns := os.Getenv("DOCKERSANDBOX_TEST_K8S_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []k8s.Option{k8s.WithNamespace(ns), k8s.WithImagePullPolicy(corev1.PullNever)}
	e, err := k8s.New(ctx, cfg, append(base, opts...)...)
	if err != nil {
		t.Fatalf("k8s.New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && os.Getenv(envKubeconfig) != "" {
		if left := leftPods(); left != "" {
			fmt.Fprintln(os.Stderr, "pods left behind:", left)
			code = 1
		}
	}
	os.Exit(code)
}
