package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -h exits 0 and lists the user's flags, not the internal -rss-child.
func TestUsageHidesInternalFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sandbox-bench")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(bin, "-h").CombinedOutput()
	require.NoError(t, err, "exit status of -h: %s", out)
	assert.Contains(t, string(out), "-image")
	assert.NotContains(t, string(out), "rss-child")
}
