package k8s_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/engine/enginetest"
	"github.com/dockersandbox/sandbox/k8s"
	"github.com/dockersandbox/sandbox/k8s/helperimage"
)

// createPod makes a pod of spec, removed at the test's end.
func createPod(t *testing.T, e *k8s.Engine, spec *engine.Spec) string {
	t.Helper()
	info, err := e.Create(ctxT(t, 2*time.Minute), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = e.Remove(context.Background(), info.ID) })
	return info.ID
}

// TestExecFloodBounded: a process that writes without end into an exec
// stream nobody reads does not grow the host's memory (the stream's pipes
// hold nothing; the connection's flow control stops the sender), and
// Close ends the stream at once.
func TestExecFloodBounded(t *testing.T) {
	e := testEngine(t)
	id := createPod(t, e, enginetest.Spec(busybox))
	st, err := e.Exec(ctxT(t, time.Minute), id, []string{"sh", "-c", "yes flood"}, "")
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	// Read a little, then nothing for 4 s: a buffer without bound would grow.
	if _, err := io.ReadFull(st.Stdout(), make([]byte, 1<<20)); err != nil {
		t.Fatalf("read the flood: %v", err)
	}
	time.Sleep(4 * time.Second)
	close(stop)
	growth := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("heap before %d MiB, peak %d MiB", before.HeapAlloc>>20, peak.Load()>>20)
	if growth > 64<<20 {
		t.Errorf("the heap grew by %d MiB while the flood was not read", growth>>20)
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, st.Stdout()); close(done) }()
	st.Close()
	select {
	case <-done:
	case <-time.After(enginetest.PromptBound):
		t.Fatal("a read went on after Close")
	}
}

// TestNoShellImage: a sandbox of an image with no shell, no tar and no
// /etc/passwd (the helper image itself, distroless-like) runs the helper,
// and files go in and out through it.
func TestNoShellImage(t *testing.T) {
	e := testEngine(t)
	spec := enginetest.Spec(helperimage.Ref(""))
	id := createPod(t, e, spec)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	content := []byte("no shell here\n")
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "f.txt", Mode: 0o600, Size: int64(len(content))})
	_, _ = tw.Write(content)
	_ = tw.Close()
	ctx := ctxT(t, time.Minute)
	if err := e.CopyTo(ctx, id, spec.WorkingDir, &buf); err != nil {
		t.Fatalf("CopyTo: %v", err)
	}
	rc, err := e.CopyFrom(ctx, id, spec.WorkingDir+"/f.txt")
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(tr)
	if !bytes.Equal(got, content) {
		t.Fatalf("round trip: %q", got)
	}
}
