package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// port-forward serves a sandbox's HTTP server (network none) on the host
// until interrupted, then exits 0.
func TestCLIPortForward(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	out, errOut, code := run(t, "", "port-forward", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: sandbox port-forward")
	assert.Contains(t, out, "-json")
	assert.Empty(t, errOut)
	_, errOut, code = run(t, "", "port-forward", "abc", "80")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "HOSTPORT:PORT")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := sandbox.New(ctx, sandbox.WithImage(testenv.BusyboxImage), sandbox.WithPullPolicy(sandbox.PullNever), sandbox.WithNetworkMode("none"))
	require.NoError(t, err)
	defer sb.Close()
	require.NoError(t, sb.Write(ctx, "/tmp/www/index.html", []byte("forwarded\n")))
	srv := sb.Command(ctx, "exec httpd -f -p 127.0.0.1:8080 -h /tmp/www")
	require.NoError(t, srv.Start())
	defer func() { cancel(); _ = srv.Wait() }()

	bin := filepath.Join(t.TempDir(), "sandbox")
	built, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(built))
	c := exec.Command(bin, "port-forward", "-json", sb.ID(), "0:8080")
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	c.Stderr = &stderr
	require.NoError(t, c.Start())
	defer c.Process.Kill()
	var info struct {
		ID       string `json:"id"`
		HostAddr string `json:"host_addr"`
		Port     int    `json:"port"`
	}
	require.NoError(t, json.NewDecoder(bufio.NewReader(stdout)).Decode(&info), stderr.String())
	assert.Equal(t, 8080, info.Port)
	assert.True(t, strings.HasPrefix(info.HostAddr, "127.0.0.1:"), info.HostAddr)
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + info.HostAddr + "/index.html")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == 200
	}, 30*time.Second, 200*time.Millisecond)
	assert.Equal(t, "forwarded\n", string(body))
	require.NoError(t, c.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "exit after an interrupt; stderr: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("port-forward did not end after SIGINT")
	}
	// The sandbox is untouched.
	_, err = sb.Stat(context.Background(), "/tmp/www/index.html")
	require.NoError(t, err)
}
