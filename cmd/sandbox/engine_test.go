package main

import (
	"github.com/dockersandbox/sandbox/internal/testenv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every command but mcp takes -engine; this binary has Docker only: -engine
// kubernetes is a usage error (status 2) that names the k8s module's
// binary and how to build it, printed once, before any sandbox is touched;
// an unknown engine is a usage error listing the ones it has; -engine
// docker is the default.
func TestCLIEngineFlag(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	for _, args := range [][]string{
		{"create"}, {"exec", "x", "--", "true"}, {"cp", "/etc/hostname", "x:/y"}, {"ls"}, {"rm", "x"},
		{"prune", "-all"}, {"port-forward", "x", "0:80"},
	} {
		out, errOut, code := run(t, "", append([]string{args[0], "-engine", "kubernetes"}, args[1:]...)...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, errOut, "this binary has docker only; the kubernetes engine is in the k8s module's sandbox", "%v", args)
		assert.Contains(t, errOut, `go build -C k8s -o "$(go env GOPATH)/bin/sandbox" ./cmd/sandbox`, "%v", args)
		assert.Equal(t, 1, strings.Count(errOut, "unknown engine"), "%v: said once: %s", args, errOut)

		out, _, code = run(t, "", args[0], "-h")
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "-engine engine", "%s -h shows -engine", args[0])
	}
	_, errOut, code := run(t, "", "ls", "-engine", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `-engine "nope": want docker`)
	_, errOut, code = run(t, "", "ls", "-engine", "docker", "-label", "dockersandbox-cli-test=none-such")
	assert.Equal(t, 0, code, errOut)
}
