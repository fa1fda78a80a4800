package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A -runtime list with an empty or a repeated runtime, and -rounds below
// one, fail at once with an error naming the flag, before any engine is
// reached.
func TestRuntimeList(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sandbox-bench")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, args := range [][]string{
		{"-runtime", "runc,"},
		{"-runtime", "runc,runsc,runc"},
		{"-runtime", ",runsc"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cmd.Environ(), "DOCKER_HOST=unix:///nonexistent.sock")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, args)
		assert.Contains(t, string(out), "-runtime", args)
		assert.Contains(t, string(out), "each runtime once", args)
	}
	cmd := exec.Command(bin, "-rounds", "0")
	cmd.Env = append(cmd.Environ(), "DOCKER_HOST=unix:///nonexistent.sock")
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "-rounds must be at least 1")
	cmd = exec.Command(bin, "-only", "ops,bogus")
	cmd.Env = append(cmd.Environ(), "DOCKER_HOST=unix:///nonexistent.sock")
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), `-only: unknown group "bogus"`, "before any engine is reached")
}
