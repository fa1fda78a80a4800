package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test cluster, as the k8s package's tests find it: without
// DOCKERSANDBOX_TEST_KUBECONFIG the tests skip.
const (
	envKubeconfig = "DOCKERSANDBOX_TEST_KUBECONFIG"
	busybox       = "dockersandbox-test/busybox:1"
	debian        = "dockersandbox-test/debian:bookworm"
)

// buildCLI builds this command and returns a runner of it on the test cluster
// (-engine kubernetes and its flags are added after the subcommand).
func buildCLI(t *testing.T) func(stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	kubeconfig := os.Getenv(envKubeconfig)
	if kubeconfig == "" {
		t.Skipf("no Kubernetes cluster: set %s to a kubeconfig", envKubeconfig)
	}
	ns := os.Getenv("DOCKERSANDBOX_TEST_K8S_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	bin := filepath.Join(t.TempDir(), "sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		full := append([]string{args[0], "-engine", "kubernetes", "-kubeconfig", kubeconfig, "-namespace", ns}, args[1:]...)
		var stdout, stderr bytes.Buffer
		c := exec.Command(bin, full...)
		c.Stdin, c.Stdout, c.Stderr = strings.NewReader(stdin), &stdout, &stderr
		c.Env = append(os.Environ(), "KUBECONFIG=/nonexistent") // the flag, not the environment, names the cluster
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
}

// TestCLIOnPods: the k8s module's sandbox runs every command on pods with
// -engine kubernetes: create (JSON), exec (output, exit status, -json,
// the working directory), cp in and out (a file of 1 MiB, intact, and
// stdout), ls by label (JSON: the pod's name, image, state, owner,
// labels), rm, and prune by label; nothing is left behind. Docker-only
// flags are refused with the library's ErrInvalidOption and make no pod.
func TestCLIOnPods(t *testing.T) {
	run := buildCLI(t)
	label := fmt.Sprintf("dockersandbox-k8scmd-test=%d", time.Now().UnixNano())
	t.Cleanup(func() { run("", "prune", "-label", label) })
	lsIDs := func() []string {
		t.Helper()
		out, errOut, code := run("", "ls", "-json", "-label", label)
		if code != 0 {
			t.Fatalf("ls: %d %s", code, errOut)
		}
		var list []struct {
			ID, Name, Image, State, Owner string
			Labels                        map[string]string
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("ls -json: %v: %s", err, out)
		}
		var ids []string
		for _, s := range list {
			if s.State != "running" || s.Owner != "cli" || s.Name != s.ID || !strings.HasPrefix(s.Image, "dockersandbox-test/") {
				t.Errorf("ls entry %+v", s)
			}
			ids = append(ids, s.ID)
		}
		return ids
	}

	var ids []string
	for _, image := range []string{busybox, debian} {
		out, errOut, code := run("", "create", "-json", "-image", image, "-label", label)
		if code != 0 {
			t.Fatalf("create %s: %d %s", image, code, errOut)
		}
		var created struct{ ID string }
		if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.ID, "sbx-") {
			t.Fatalf("create -json printed %q (%v)", out, err)
		}
		ids = append(ids, created.ID)
	}
	id := ids[0]
	if got := lsIDs(); len(got) != 2 {
		t.Fatalf("ls -label found %v, want %v", got, ids)
	}

	out, errOut, code := run("", "exec", id, "--", "echo hi; pwd; hostname; exit 7")
	if code != 7 || out != "hi\n/workspace\n"+id+"\n" {
		t.Errorf("exec: status %d, output %q, stderr %q", code, out, errOut)
	}
	out, _, code = run("", "exec", "-json", ids[1], "--", "cat /etc/debian_version >/dev/null && echo debian")
	var res struct {
		Output   string `json:"output"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Output != "debian\n" || res.ExitCode != 0 {
		t.Errorf("exec -json on debian: %d %q %v", code, out, err)
	}
	out, _, code = run("in-stdin\n", "exec", "-i", id, "--", "cat")
	if code != 0 || out != "in-stdin\n" {
		t.Errorf("exec -i: %d %q", code, out)
	}

	content := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.WriteFile(src, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = run("", "cp", "-json", src, id+":sub/file"); code != 0 || !strings.Contains(out, `"bytes": 1048576`) {
		t.Fatalf("cp in: %d %q %s", code, out, errOut)
	}
	if _, errOut, code = run("", "cp", "-q", id+":/workspace/sub/file", dst); code != 0 {
		t.Fatalf("cp out: %d %s", code, errOut)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, content) {
		t.Errorf("cp out: %d bytes (%v), want the 1 MiB uploaded", len(got), err)
	}
	if out, _, code = run("", "cp", id+":sub/file", "-"); code != 0 || out != string(content) {
		t.Errorf("cp out to stdout: %d, %d bytes", code, len(out))
	}
	if out, _, code = run("", "exec", id, "--", "wc -c < sub/file"); code != 0 || strings.TrimSpace(out) != "1048576" {
		t.Errorf("the size in the pod: %d %q", code, out)
	}

	// Docker-only flags: refused, no pod made.
	for _, args := range [][]string{{"-network", "bridge"}, {"-pull", "always"}} {
		_, errOut, code := run("", append([]string{"create", "-image", busybox, "-label", label}, args...)...)
		if code != 1 || !strings.Contains(errOut, "invalid option") || !strings.Contains(errOut, "Docker only, not on the kubernetes engine") {
			t.Errorf("create %v: status %d, %q", args, code, errOut)
		}
	}
	if got := lsIDs(); len(got) != 2 {
		t.Errorf("after the refused creates, ls finds %v", got)
	}

	// A missing pod: "no such sandbox", status 1.
	if _, errOut, code = run("", "exec", "sbx-nosuchpd", "--", "true"); code != 1 || !strings.Contains(errOut, "no such sandbox") {
		t.Errorf("exec on a missing pod: %d %q", code, errOut)
	}

	start := time.Now()
	if out, errOut, code = run("", "rm", "-json", id); code != 0 || strings.TrimSpace(out) != `[
  "`+id+`"
]` {
		t.Errorf("rm: %d %q %s", code, out, errOut)
	}
	t.Logf("rm took %v", time.Since(start).Round(time.Millisecond))
	if got := lsIDs(); len(got) != 1 || got[0] != ids[1] {
		t.Errorf("after rm, ls finds %v, want [%s]", got, ids[1])
	}
	if _, errOut, code = run("", "prune"); code != 2 {
		t.Errorf("prune without a filter: %d %s", code, errOut)
	}
	if out, errOut, code = run("", "prune", "-json", "-label", label); code != 0 || !strings.Contains(out, ids[1]) {
		t.Errorf("prune: %d %q %s", code, out, errOut)
	}
	if got := lsIDs(); len(got) != 0 {
		t.Errorf("after prune, ls finds %v", got)
	}
}
