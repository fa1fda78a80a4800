package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPSignals: `sandbox mcp` hands SIGINT and SIGTERM to the server,
// which removes its sandbox and exits 0 within 20 s; the command's own
// process is the server (it execs it), so nothing can kill the server
// before its cleanup.
func TestMCPSignals(t *testing.T) {
	testenv.MustHaveEngine(t)
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "sandbox"), ".").CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command("go", "build", "-C", "../../mcp", "-o", filepath.Join(dir, "sandbox-mcp"), "./cmd/sandbox-mcp").CombinedOutput()
	require.NoError(t, err, string(out))

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(filepath.Join(dir, "sandbox"), "mcp", "-image", testenv.BusyboxImage, "-pull", "never", "-label", "dockersandbox-cli-test="+strings.ReplaceAll(t.Name(), "/", "_"))
			cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			cmd.Stderr = io.Discard
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				exited <- cmd.Wait()
			}()
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })
			next := func() string {
				select {
				case l := <-lines:
					return l
				case <-time.After(60 * time.Second):
					t.Fatal("no answer from the server")
					return ""
				}
			}
			for _, msg := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"command":"hostname"}}}`,
			} {
				_, err := io.WriteString(stdin, msg+"\n")
				require.NoError(t, err)
			}
			assert.Contains(t, next(), `"protocolVersion"`)
			m := regexp.MustCompile(`"text":"([0-9a-f]{12})\\n`).FindStringSubmatch(next())
			require.Len(t, m, 2)
			id := m[1]
			require.True(t, testenv.SandboxExists(t, id))
			t.Cleanup(func() { // on failure only: the test fails on the leak first
				if testenv.SandboxExists(t, id) {
					exec.Command(filepath.Join(dir, "sandbox"), "rm", id).Run()
				}
			})

			start := time.Now()
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				assert.NoError(t, err, "exit status")
			case <-time.After(20 * time.Second):
				t.Fatalf("sandbox mcp did not exit within 20 s of %v", sig)
			}
			t.Logf("exited %v after %v", time.Since(start).Round(time.Millisecond), sig)
			assert.False(t, testenv.SandboxExists(t, id), "the sandbox is removed")
		})
	}
}
