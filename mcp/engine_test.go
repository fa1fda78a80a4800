package sandboxmcp_test

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCommandEngineFlag: this module's sandbox-mcp has Docker only:
// -engine kubernetes is refused with status 2 before anything is created,
// naming the k8s module's sandbox-mcp and how to build it.
func TestCommandEngineFlag(t *testing.T) {
	bin := buildCommand(t)
	cmd := exec.Command(bin, "-engine", "kubernetes")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if assert.True(t, errors.As(err, &exitErr), "%v", err) {
		assert.Equal(t, 2, exitErr.ExitCode(), stderr.String())
	}
	assert.Contains(t, stderr.String(), "the kubernetes engine is in the k8s module's sandbox-mcp")
	assert.Contains(t, stderr.String(), `go build -C k8s -o "$(go env GOPATH)/bin/sandbox-mcp" ./cmd/sandbox-mcp`)
}
