package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/k8s"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	envKubeconfig = "DOCKERSANDBOX_TEST_KUBECONFIG"
	busybox       = "dockersandbox-test/busybox:1"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStdioOnPod: the k8s module's sandbox-mcp with -engine kubernetes
// serves the tools over stdio to the MCP SDK's client: its one sandbox is
// a pod (created at start, found by its label), every tool call works in
// it (a command's output and exit status, write, read, edit, grep, ls,
// glob, delete), and closing the client deletes the pod and ends the
// server with status 0. -network bridge is refused at start, with no pod.
func TestStdioOnPod(t *testing.T) {
	kubeconfig := os.Getenv(envKubeconfig)
	if kubeconfig == "" {
		t.Skipf("no Kubernetes cluster: set %s to a kubeconfig", envKubeconfig)
	}
	ns := os.Getenv("DOCKERSANDBOX_TEST_K8S_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel) // after the check for pods left behind
	cfg, err := k8s.Kubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := k8s.New(ctx, cfg, k8s.WithNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	key, value := "dockersandbox-k8scmd-mcp-test", fmt.Sprint(time.Now().UnixNano())
	pods := func() []string {
		t.Helper()
		list, err := eng.List(ctx, map[string]string{key: value})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range list {
			names = append(names, p.Name)
		}
		return names
	}
	t.Cleanup(func() {
		for _, name := range pods() {
			t.Errorf("pod %s left behind", name)
			_ = eng.Remove(context.Background(), name)
		}
	})

	bin := filepath.Join(t.TempDir(), "sandbox-mcp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := []string{"-engine", "kubernetes", "-kubeconfig", kubeconfig, "-namespace", ns,
		"-image", busybox, "-label", key + "=" + value}

	refused := exec.Command(bin, append(args, "-network", "bridge")...)
	out, err := refused.CombinedOutput()
	if refused.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "Docker only, not on the kubernetes engine") {
		t.Errorf("-network bridge: %v: %s", err, out)
	}

	cmd := exec.Command(bin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "k8scmd-test", Version: "1"}, nil)
	start := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; server log:\n%s", err, stderr)
	}
	defer func() {
		cs.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", stderr)
		}
	}()
	t.Logf("connected in %v (the pod is made at start)", time.Since(start).Round(time.Millisecond))
	names := pods()
	if len(names) != 1 {
		t.Fatalf("pods with the label: %v, want one", names)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 8 {
		t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
	}
	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"execute", map[string]any{"command": "hostname; pwd; echo oops >&2; exit 3"}, names[0] + "\n/workspace\noops\n\n[Command failed with exit code 3]"},
		{"write_file", map[string]any{"file_path": "notes/a.txt", "content": "alpha\nbeta gamma\n"}, "Updated file /workspace/notes/a.txt"},
		{"read_file", map[string]any{"file_path": "/workspace/notes/a.txt"}, "1  alpha\n2  beta gamma"},
		{"edit_file", map[string]any{"file_path": "notes/a.txt", "old_string": "beta", "new_string": "delta"}, "Successfully replaced 1 instance(s) of the string in '/workspace/notes/a.txt'"},
		{"grep", map[string]any{"pattern": "gamma", "output_mode": "content"}, "/workspace/notes/a.txt:\n  2: delta gamma"},
		{"ls", map[string]any{"path": "/workspace/notes"}, "['/workspace/notes/a.txt']"},
		{"glob", map[string]any{"pattern": "*.txt"}, "['/workspace/notes/a.txt']"},
		{"delete", map[string]any{"file_path": "notes/a.txt"}, "Deleted /workspace/notes/a.txt"},
		{"ls", map[string]any{"path": "/workspace/notes"}, "No files found"},
	} {
		got, isErr := call(c.tool, c.args)
		if isErr || got != c.want {
			t.Errorf("%s %v: %q (error %v), want %q", c.tool, c.args, got, isErr, c.want)
		}
	}

	// Closing the client ends the server's stdin: it deletes the pod and
	// exits 0 (the SDK waits 5 s, then signals it).
	start = time.Now()
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	t.Logf("server ended %v after the client closed", time.Since(start).Round(time.Millisecond))
	if left := pods(); len(left) != 0 {
		t.Errorf("pods left after the server ended: %v", left)
	}
}
