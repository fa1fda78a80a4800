package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestCLIEgress: create -egress-allow makes a sandbox with no network but
// its egress proxy; "sandbox egress" serves it, logging each decision,
// until interrupted; without it the sandbox has no way out.
func TestCLIEgress(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := filepath.Join(t.TempDir(), "sandbox")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "upstream") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// The "internet" is this loopback server: an address rule allows it.
	allow := "127.0.0.1:" + port

	stdout, errOut, code := runBin(t, bin, "", "create", "-image", testenv.BusyboxImage, "-pull", "never", "-json", "-egress-allow", allow)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "sandbox egress")
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &created))
	id := created.ID
	t.Cleanup(func() { runBin(t, bin, "", "rm", id) })
	get := "unset no_proxy NO_PROXY; wget -q -O- http://" + allow + "/ 2>&1; echo; wget -q -O- http://127.0.0.1:1/ 2>&1"

	stdout, _, _ = runBin(t, bin, "", "exec", id, "--", get)
	assert.NotContains(t, stdout, "upstream", "nothing serves the egress: no way out")

	var logged syncBuffer
	serve := exec.Command(bin, "egress", "-egress-allow", allow, id)
	serve.Stderr = &logged
	require.NoError(t, serve.Start())
	defer serve.Process.Kill()
	require.Eventually(t, func() bool { return strings.Contains(logged.String(), "serving the egress") }, 30*time.Second, 50*time.Millisecond, logged.String())
	stdout, _, _ = runBin(t, bin, "", "exec", id, "--", get)
	assert.Contains(t, stdout, "upstream")
	assert.Contains(t, stdout, "403")
	require.NoError(t, serve.Process.Signal(os.Interrupt))
	require.NoError(t, serve.Wait(), logged.String())
	assert.Contains(t, logged.String(), "egress allowed GET "+allow)
	assert.Contains(t, logged.String(), "egress denied GET 127.0.0.1:1")

	_, _, code = runBin(t, bin, "", "egress", id)
	assert.Equal(t, 2, code, "egress needs a policy")
	_, _, code = runBin(t, bin, "", "create", "-egress-allow", "exa mple", "-image", testenv.BusyboxImage, "-pull", "never")
	assert.Equal(t, 2, code, "a bad entry")
}
