package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/engine/enginetest"
	"github.com/dockersandbox/sandbox/k8s"
)

// TestConformance runs the engine conformance suite on pods of both test
// images (busybox, and debian:bookworm).
func TestConformance(t *testing.T) {
	e := testEngine(t)
	for _, img := range []string{busybox, debian} {
		t.Run(img, func(t *testing.T) { enginetest.Run(t, e, img) })
	}
}

// TestCreateFailsFast: an image that is not there fails Create with
// ErrPodFailed, long before its context ends, and leaves no pod.
func TestCreateFailsFast(t *testing.T) {
	e := testEngine(t)
	spec := enginetest.Spec("dockersandbox-test/no-such-image:1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err := e.Create(ctx, spec)
	if !errors.Is(err, k8s.ErrPodFailed) || !errors.Is(err, engine.ErrImageNotFound) {
		t.Fatalf("Create of a missing image: %v, want ErrPodFailed and engine.ErrImageNotFound", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Create took %v to fail", d)
	}
	list, err := e.List(ctx, map[string]string{"com.dockersandbox.enginetest": spec.Labels["com.dockersandbox.enginetest"]})
	if err != nil || len(list) != 0 {
		t.Errorf("left behind: %+v %v", list, err)
	}
}

// TestUnreachable: an API server that refuses connections is
// engine.ErrUnreachable (a loopback port nobody listens on).
func TestUnreachable(t *testing.T) {
	testEngine(t) // skip without a cluster, as the others
	cfg, err := k8s.Kubeconfig(os.Getenv(envKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "https://127.0.0.1:1"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = k8s.New(ctx, cfg)
	if !errors.Is(err, engine.ErrUnreachable) {
		t.Fatalf("New against a closed port: %v, want ErrUnreachable", err)
	}
}

// TestNamedUserRefused: a pod runs as numbers only.
func TestNamedUserRefused(t *testing.T) {
	e := testEngine(t)
	spec := enginetest.Spec(busybox)
	spec.User = "nobody"
	_, err := e.Create(context.Background(), spec)
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Create as a named user: %v, want errors.ErrUnsupported", err)
	}
}

// TestPidsLimitRefused: a pids limit a pod cannot set is refused, not
// dropped (a fork bomb would reach the node), unless the engine is told
// that the kubelet limits pods; nothing is left either way.
func TestPidsLimitRefused(t *testing.T) {
	spec := enginetest.Spec(busybox)
	spec.PidsLimit = 256
	_, err := strictEngine(t).Create(context.Background(), spec)
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Create with a pids limit: %v, want errors.ErrUnsupported", err)
	}
	e := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := e.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create with a pids limit, accepted: %v", err)
	}
	if err := e.Remove(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
}

// leftPods names the pods this package's tests made that are still in
// the test namespace: its sandboxes' (owned by this process) and the
// engine's own (enginetest's label). go test runs the module's packages
// at once, and another package's pod being made is no leak of this one
// (a CI run failed on one pending pod, most likely k8s/cmd's tests').
func leftPods() string {
	e := testEngine(&testing.T{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := e.List(ctx, nil)
	if err != nil {
		return err.Error()
	}
	host, _ := os.Hostname()
	owner := host + ":" + strconv.Itoa(os.Getpid()) // as package sandbox writes LabelOwner
	var names []string
	for _, i := range list {
		if i.Labels[sandbox.LabelOwner] != owner && i.Labels["com.dockersandbox.enginetest"] == "" {
			continue
		}
		names = append(names, fmt.Sprintf("%s (%s)", i.Name, i.State))
	}
	return strings.Join(names, ", ")
}
