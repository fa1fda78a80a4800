package k8s_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine/enginetest"
)

// BenchmarkCreateToFirstCommand: sandbox.New on a pod (pod created,
// scheduled, init container, helper up) through the first Execute.
// Close (the deletion) is not timed.
func BenchmarkCreateToFirstCommand(b *testing.B) {
	e := testEngine(b)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		sb, err := sandbox.New(ctx, sandbox.WithEngine(e), sandbox.WithImage(busybox), sandbox.WithUser("1000:1000"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sb.Execute(ctx, "true"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = sb.Close()
		cancel()
		b.StartTimer()
	}
}

// BenchmarkExecute: one Execute("true") round trip on a pod, over the
// helper's shared channel (one exec stream, opened before the timing).
func BenchmarkExecute(b *testing.B) {
	e := testEngine(b)
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.WithEngine(e), sandbox.WithImage(busybox), sandbox.WithUser("1000:1000"))
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.Execute(ctx, "true"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := sb.Execute(ctx, "true"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawExec: the engine's own round trip (raw_exec): a client-go
// exec of `true` in the pod (WebSocket to the API server, kubelet,
// containerd), until it ends.
func BenchmarkRawExec(b *testing.B) {
	e := testEngine(b)
	ctx := context.Background()
	info, err := e.Create(ctx, enginetest.Spec(busybox))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Remove(ctx, info.ID)
	for b.Loop() {
		st, err := e.Exec(ctx, info.ID, []string{"true"}, "")
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, st.Stderr()) }()
		if _, err := io.Copy(io.Discard, st.Stdout()); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}

// BenchmarkExecuteDocker: BenchmarkExecute on the local Docker engine, for
// a comparison taken at the same load (skipped without Docker).
func BenchmarkExecuteDocker(b *testing.B) {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.WithImage(busybox), sandbox.WithUser("1000:1000"))
	if err != nil {
		b.Skipf("no Docker: %v", err)
	}
	defer sb.Close()
	if _, err := sb.Execute(ctx, "true"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := sb.Execute(ctx, "true"); err != nil {
			b.Fatal(err)
		}
	}
}
