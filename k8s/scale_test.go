package k8s_test

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/k8s"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestScaleOnCluster creates DOCKERSANDBOX_TEST_K8S_SCALE sandboxes (50
// in the issue) through the scheduler, 10 at a time, each with requests
// and limits so that the scheduler places them, runs a command in each and
// closes them all; then a Pool of 3 on the engine hands out ready pods.
// Heavy: it runs only when the variable is set.
func TestScaleOnCluster(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DOCKERSANDBOX_TEST_K8S_SCALE"))
	if n <= 0 {
		t.Skip("set DOCKERSANDBOX_TEST_K8S_SCALE=50 to create that many sandboxes")
	}
	e := testEngine(t, k8s.WithResources(corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}))
	label := runLabel(t)
	ctx := ctxT(t, 20*time.Minute)
	start := time.Now()
	sbs := make([]*sandbox.Sandbox, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 10)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sb, err := sandbox.New(ctx, sandbox.WithEngine(e), sandbox.WithImage(busybox),
				sandbox.WithUser("1000:1000"), sandbox.WithLabels(label))
			if err == nil {
				sbs[i] = sb
				_, err = sb.Execute(ctx, "true")
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	created := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Errorf("sandbox %d: %v", i, err)
		}
	}
	list, err := sandbox.List(ctx, sandbox.Filter{Labels: label}, sandbox.WithEngine(e))
	if err != nil || len(list) != n {
		t.Errorf("List: %d sandboxes, %v; want %d", len(list), err, n)
	}
	start = time.Now()
	for _, sb := range sbs {
		if sb != nil {
			wg.Add(1)
			go func() { defer wg.Done(); sem <- struct{}{}; defer func() { <-sem }(); _ = sb.Close() }()
		}
	}
	wg.Wait()
	t.Logf("%d sandboxes created and a command run in each in %v; closed in %v", n, created, time.Since(start))

	pool, err := sandbox.NewPool(ctx, sandbox.PoolSize(3), sandbox.PoolSandboxOptions(sandbox.WithEngine(e),
		sandbox.WithImage(busybox), sandbox.WithUser("1000:1000"), sandbox.WithLabels(label)))
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	defer pool.Close()
	if err := pool.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	got := time.Now()
	sb, err := pool.Get(ctx)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if _, err := sb.Execute(ctx, "true"); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	t.Logf("a pooled sandbox: Get and a first command in %v", time.Since(got))
	_ = sb.Close()
}
