package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -engine kubernetes fails at once, naming the k8s module's sandbox-bench
// and how to build it; -h shows -engine.
func TestEngineFlag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sandbox-bench")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(bin, "-engine", "kubernetes", "-n", "1").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "the kubernetes engine is in the k8s module's sandbox-bench")
	assert.Contains(t, string(out), `go build -C k8s -o "$(go env GOPATH)/bin/sandbox-bench" ./cmd/sandbox-bench`)
	out, err = exec.Command(bin, "-h").CombinedOutput()
	require.NoError(t, err)
	assert.Contains(t, string(out), "-engine")
}
