package sandboxmcp_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/stretchr/testify/assert"
)

// TestConfigEgress: the server's sandboxes get the egress policy of the
// config: what it allows is reached through the proxy, the rest is
// denied, and each decision is logged.
func TestConfigEgress(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer srv.Close()
	var mu sync.Mutex
	var events []sandbox.EgressEvent
	cfg := testConfig(label)
	cfg.Egress = &sandbox.EgressPolicy{
		Allow: []string{"pypi.test"},
		Log:   func(ev sandbox.EgressEvent) { mu.Lock(); events = append(events, ev); mu.Unlock() },
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}
	cs, _ := serveInMemory(t, ctx, cfg, "")
	out := callOK(t, ctx, cs, "execute", map[string]any{"command": "wget -q -O- http://pypi.test/simple/; echo; wget -q -O- http://evil.test/ 2>&1; ls /sys/class/net"})
	assert.Contains(t, out, "hello from pypi.test")
	assert.Contains(t, out, "403")
	assert.Contains(t, out, "lo\n", "no network but loopback")
	assert.NotContains(t, out, "eth0")
	// The proxy logs a decision once the connection's answer is written:
	// the command may have read it first.
	counts := func() (allowed, denied int, seen string) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range events {
			if ev.Allowed && ev.Host == "pypi.test" {
				allowed++
			}
			if !ev.Allowed && ev.Host == "evil.test" {
				denied++
			}
		}
		return allowed, denied, fmt.Sprintf("%+v", events)
	}
	assert.Eventually(t, func() bool { a, d, _ := counts(); return a >= 1 && d >= 1 }, 10*time.Second, 20*time.Millisecond)
	allowed, denied, seen := counts()
	assert.Equal(t, 1, allowed, seen)
	assert.Equal(t, 1, denied, seen)
}
