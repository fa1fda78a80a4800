package k8s_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/k8s"
)

// closeBound bounds Close of a sandbox on a pod: the deletion and the wait
// until the pod is gone (1-4 s measured; slack for a loaded machine).
const closeBound = 30 * time.Second

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// runLabel is a label unique to one test.
func runLabel(t *testing.T) map[string]string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return map[string]string{"k8s-test-run": hex.EncodeToString(b)}
}

// newSandbox makes a sandbox on a pod of the busybox test image, as user
// 1000, closed at the test's end.
func newSandbox(t *testing.T, e *k8s.Engine, label map[string]string, opts ...sandbox.Option) *sandbox.Sandbox {
	t.Helper()
	base := []sandbox.Option{sandbox.WithEngine(e), sandbox.WithImage(busybox), sandbox.WithLabels(label),
		sandbox.WithUser("1000:1000"), sandbox.WithLifetime(10 * time.Minute)}
	sb, err := sandbox.New(ctxT(t, 2*time.Minute), append(base, opts...)...)
	if err != nil {
		t.Fatalf("sandbox.New on a pod: %v", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

// TestSandboxOnPod: the library on a pod: commands, files, a process
// killed with its tree, a dial into the pod, List by label, Attach by
// the pod's name, and Close
// that deletes the pod within its bound.
func TestSandboxOnPod(t *testing.T) {
	e := testEngine(t)
	label := runLabel(t)
	sb := newSandbox(t, e, label)
	ctx := ctxT(t, 3*time.Minute)

	res, err := sb.Execute(ctx, "id -u; pwd; echo hi > f && cat f")
	if err != nil || res.Output != "1000\n/workspace\nhi\n" || res.ExitCode != 0 {
		t.Fatalf("Execute: %+v %v", res, err)
	}
	// Files: write, read, edit, grep.
	if err := sb.Write(ctx, "notes/a.txt", []byte("hello world\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if n, err := sb.Edit(ctx, "notes/a.txt", "world", "pods", false); err != nil || n != 1 {
		t.Fatalf("Edit: %d %v", n, err)
	}
	if r, err := sb.Read(ctx, "notes/a.txt"); err != nil || !strings.Contains(r.Content, "hello pods") {
		t.Fatalf("Read: %+v %v", r, err)
	}
	if g, err := sb.Grep(ctx, "pods", "notes"); err != nil || len(g.Matches) != 1 {
		t.Fatalf("Grep: %+v %v", g, err)
	}
	// A process whose child runs in the background: Kill ends both.
	p, err := sb.StartProcess(ctx, "sleep 1000 & echo $! > /tmp/child; wait")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitFor(t, func() bool { r, err := sb.Execute(ctx, "test -s /tmp/child"); return err == nil && r.ExitCode == 0 })
	if err := p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	waitFor(t, func() bool {
		r, err := sb.Execute(ctx, "kill -0 $(cat /tmp/child)")
		return err == nil && r.ExitCode != 0
	})
	// Dial a server in the pod through the helper.
	srv, err := sb.StartProcess(ctx, "exec nc -ll -p 7000 -e cat")
	if err != nil {
		t.Fatalf("Start the server: %v", err)
	}
	defer srv.Kill(ctx)
	var conn interface {
		Write([]byte) (int, error)
		Read([]byte) (int, error)
		Close() error
	}
	waitFor(t, func() bool {
		c, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000")
		if err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("Dial: %v", err)
		}
		if err == nil {
			conn = c
		}
		return err == nil
	})
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo through Dial: %q %v", line, err)
	}
	conn.Close()
	// List finds the pod by label.
	list, err := sandbox.List(ctx, sandbox.Filter{Labels: label}, sandbox.WithEngine(e))
	if err != nil || len(list) != 1 || list[0].ID != sb.ID() {
		t.Fatalf("List: %+v %v", list, err)
	}
	// Attach by the pod's name, from another handle.
	other, err := sandbox.Attach(ctx, sb.ID(), sandbox.WithEngine(e))
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if r, err := other.Execute(ctx, "cat f"); err != nil || r.Output != "hi\n" {
		t.Fatalf("Execute after Attach: %+v %v", r, err)
	}
	other.Detach()
	// Close deletes the pod within its bound.
	start := time.Now()
	if err := sb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	d := time.Since(start)
	t.Logf("Close took %v", d)
	if d > closeBound {
		t.Errorf("Close took %v, bound %v", d, closeBound)
	}
	if _, err := e.Inspect(ctx, sb.ID()); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the pod after Close: %v, want ErrNotFound", err)
	}
}

// TestPruneOnPods: a sandbox left behind (detached) is found by List and
// removed by Prune, by label.
func TestPruneOnPods(t *testing.T) {
	e := testEngine(t)
	label := runLabel(t)
	sb := newSandbox(t, e, label)
	sb.Detach()
	ctx := ctxT(t, 2*time.Minute)
	removed, err := sandbox.Prune(ctx, sandbox.Filter{Labels: label}, sandbox.WithEngine(e))
	if err != nil || len(removed) != 1 || removed[0] != sb.ID() {
		t.Fatalf("Prune: %v %v", removed, err)
	}
	list, err := e.List(ctx, label)
	if err != nil || len(list) != 0 {
		t.Fatalf("after Prune: %+v %v", list, err)
	}
}

// TestHelperKilledInPod: the helper serving the channel is killed from
// inside the pod during a call: the call ends (an error, or the command's
// own result) within its bound, never hangs, and the next call works on a
// new channel.
func TestHelperKilledInPod(t *testing.T) {
	e := testEngine(t)
	sb := newSandbox(t, e, runLabel(t))
	ctx := ctxT(t, 2*time.Minute)
	if _, err := sb.Execute(ctx, "true"); err != nil {
		t.Fatal(err)
	}
	kill := `for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in *sandbox-helper\ serve*) kill -9 ${p#/proc/};; esac; done; sleep 5`
	start := time.Now()
	_, err := sb.Execute(ctxT(t, time.Minute), kill)
	t.Logf("the call whose helper was killed: %v after %v", err, time.Since(start))
	if err != nil && !errors.Is(err, sandbox.ErrHelper) && !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("error %v is neither ErrHelper nor ErrGone", err)
	}
	if d := time.Since(start); d > 50*time.Second {
		t.Errorf("the call took %v", d)
	}
	res, err := sb.Execute(ctx, "echo again")
	if err != nil || res.Output != "again\n" {
		t.Fatalf("the next call: %+v %v", res, err)
	}
}

// TestFloodOnPod: a command that writes without end is cut at the
// sandbox's output cap; the host keeps only that.
func TestFloodOnPod(t *testing.T) {
	e := testEngine(t)
	sb := newSandbox(t, e, runLabel(t))
	ctx := ctxT(t, 2*time.Minute)
	res, err := sb.Execute(ctx, "yes flood | head -c 200000000", sandbox.ExecTimeout(60*time.Second))
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if !res.Truncated || len(res.Output) > 2<<20 {
		t.Fatalf("output of %d bytes, truncated %v", len(res.Output), res.Truncated)
	}
	t.Logf("200 MB of output: %d bytes kept, exit %d", len(res.Output), res.ExitCode)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestEgressNeedsIsolation: an egress policy takes the pod's network away
// (the proxy is the only way out), which a pod cannot do itself: without
// k8s.WithNetworkNoneAccepted (the namespace isolates its pods) the
// sandbox is refused and no pod is left; with it the policy decides, in
// this process, where the pod's requests go.
func TestEgressNeedsIsolation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	t.Cleanup(srv.Close)
	policy := sandbox.EgressPolicy{
		Allow: []string{"allowed.test:80"},
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			if address != "allowed.test:80" {
				return nil, fmt.Errorf("no test server for %s", address)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}

	label := runLabel(t)
	_, err := sandbox.New(ctxT(t, 2*time.Minute), sandbox.WithEngine(strictEngine(t)), sandbox.WithImage(busybox),
		sandbox.WithLabels(label), sandbox.WithUser("1000:1000"), sandbox.WithEgress(policy))
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "NetworkPolicy") {
		t.Fatalf("New with an egress policy, namespace not said to be isolated: %v, want errors.ErrUnsupported naming the NetworkPolicy", err)
	}
	if left, err := sandbox.List(ctxT(t, time.Minute), sandbox.Filter{Labels: label}, sandbox.WithEngine(strictEngine(t))); err != nil || len(left) != 0 {
		t.Fatalf("a refused sandbox left %v (%v)", left, err)
	}

	sb := newSandbox(t, testEngine(t, k8s.WithNetworkNoneAccepted()), label, sandbox.WithEgress(policy))
	ctx := ctxT(t, 2*time.Minute)
	res, err := sb.Execute(ctx, "wget -qO- http://allowed.test/; echo; wget -qO- http://other.test/ 2>&1; echo rc=$?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Output, "hello from allowed.test\n") || !strings.Contains(res.Output, "403") || !strings.HasSuffix(res.Output, "rc=1\n") {
		t.Fatalf("through the policy on a pod: %q, want the allowed name's page, then a 403", res.Output)
	}
}
