package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// build builds the command for one test and returns a runner for it.
func build(t *testing.T) func(t *testing.T, stdin string, args ...string) (string, string, int) {
	bin := filepath.Join(t.TempDir(), "sandbox")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return func(t *testing.T, stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runBin(t, bin, stdin, args...)
	}
}

// runBin runs bin and returns stdout, stderr and the exit status.
func runBin(t *testing.T, bin, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := exec.Command(bin, args...)
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader(stdin), &stdout, &stderr
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestCLI(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	out, errOut, code := run(t, "", "create", "-image", testenv.BusyboxImage, "-pull", "never", "-json")
	require.Equal(t, 0, code, errOut)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	require.Len(t, created.ID, 12)
	id := created.ID
	t.Cleanup(func() { run(t, "", "rm", id) })

	out, errOut, code = run(t, "", "exec", id, "--", "echo out; echo err >&2; exit 3")
	assert.Equal(t, 3, code)
	assert.Equal(t, "out\n", out)
	assert.Equal(t, "err\n", errOut)

	out, _, code = run(t, "", "exec", "-json", id, "--", "printf hi")
	assert.Equal(t, 0, code)
	assert.JSONEq(t, `{"output":"hi","exit_code":0,"truncated":false,"timed_out":false,"oom_killed":false}`, out)

	_, _, code = run(t, "", "exec", "-timeout", "200ms", id, "--", "sleep 5")
	assert.Equal(t, 124, code)

	out, _, code = run(t, "from stdin", "exec", "-i", id, "--", "cat")
	assert.Equal(t, 0, code)
	assert.Equal(t, "from stdin", out)

	local := filepath.Join(t.TempDir(), "f.txt")
	require.NoError(t, os.WriteFile(local, []byte("payload"), 0o644))
	_, errOut, code = run(t, "", "cp", local, id+":dir/f.txt")
	require.Equal(t, 0, code, errOut)
	out, _, code = run(t, "", "cp", "-q", id+":/workspace/dir/f.txt", "-")
	assert.Equal(t, 0, code)
	assert.Equal(t, "payload", out)
	_, errOut, code = run(t, "", "cp", id+":/workspace/missing", "-")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no such file")

	out, _, code = run(t, "", "ls", "-json", "-owner", "cli")
	assert.Equal(t, 0, code)
	var list []struct {
		ID    string `json:"id"`
		Owner string `json:"owner"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	found := false
	for _, s := range list {
		found = found || (s.ID == id && s.Owner == "cli")
	}
	assert.True(t, found, "ls lists the sandbox, owned by the cli")

	out, _, code = run(t, "", "rm", id)
	assert.Equal(t, 0, code)
	assert.Equal(t, id+"\n", out)
	_, errOut, code = run(t, "", "exec", id, "--", "true")
	assert.Equal(t, 1, code)
	assert.Equal(t, "sandbox exec: no such sandbox: "+id+"\n", errOut)
}

func TestCLIUsage(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	for _, args := range [][]string{{}, {"bogus"}, {"exec"}, {"exec", "id"}, {"cp", "a", "b"}, {"prune"}, {"create", "-pull", "sometimes"}, {"rm"},
		{"prune", "-all", "-owner", "x"}, {"ls", "-older-than", "-1h"}, {"ls", "-label", "=x"}, {"create", "-memory", "lots"}, {"create", "-label", "novalue"},
		{"cp", "-json", "id:/x", "-"}, {"ls", "extra"}} {
		_, _, code := run(t, "", args...)
		assert.Equal(t, 2, code, "%v", args)
	}
	out, _, code := run(t, "", "prune", "-older-than", "87600h", "-json")
	assert.Equal(t, 0, code)
	assert.Equal(t, "[]\n", out)
}
