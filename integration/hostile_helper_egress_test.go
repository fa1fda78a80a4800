//go:build linux

package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
)

// Root in the container replaces the helper that carries the egress, and
// forges what reaches the host for each connection to the proxy: requests
// for denied names and addresses, a Host that is not the URL's, a second
// request in an allowed tunnel naming another host, TLS for another name.
// The host decides on the bytes whoever sent them: each is denied and
// logged, and nothing the policy denies is ever dialed.
func TestHostileHelperEgress(t *testing.T) {
	skipInShort(t)
	skipReplacedHelperOnPodman(t)
	t.Parallel()
	cli := testenv.BackdoorClient(t)
	helper := toolBinary(t, "internal/testenv/hostilehelper")
	f := newEgressFixture(t)
	sb := hostileSandbox(t, cli, testenv.BusyboxImage, sandbox.WithEgress(f.policy("allowed.test")))

	installHostile(t, cli, sb.ID(), helper, "egress-forge")
	// The shared channel's helper (the egress listener's) killed, by its
	// own user (the container's: under the secure profile root has no
	// capability to signal another user's process): the library opens
	// the channel again, with the replacement.
	testenv.Exec(t, cli, sb.ID(), "", "sh", "-c",
		`for d in /proc/[0-9]*; do case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in *sandbox-helper\ serve\ ) kill -9 ${d#/proc/};; esac; done; true`)

	denied := []struct {
		what, host string
		port       int
		reason     string // in the event's reason
	}{
		{"a CONNECT to a denied name", "other.test", 443, "denied"},
		{"a GET for a denied name", "other.test", 80, "denied"},
		{"a Host that is not the URL's", "allowed.test", 80, `Host "other.test"`},
		{"a CONNECT to an address", "192.0.2.10", 80, "denied"},
		{"a CONNECT to an IPv6 address", "2001:db8::10", 443, "denied"},
		{"TLS for another name in an allowed tunnel", "allowed.test", 443, `TLS for "other.test"`},
		{"a CONNECT to an allowed name with another Host", "allowed.test", 443, `Host "other.test:443"`},
	}
	found := func(host string, port int, ok func(sandbox.EgressEvent) bool) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.ContainsFunc(f.events, func(ev sandbox.EgressEvent) bool {
			return ev.Host == host && ev.Port == port && !ev.Allowed && ok(ev)
		})
	}
	for _, d := range denied {
		assert.Eventually(t, func() bool {
			return found(d.host, d.port, func(ev sandbox.EgressEvent) bool { return strings.Contains(ev.Reason, d.reason) })
		}, 30*time.Second, 50*time.Millisecond, "%s: a denial of %s:%d logged", d.what, d.host, d.port)
	}
	assert.Eventually(t, func() bool {
		return found("allowed.test", 80, func(ev sandbox.EgressEvent) bool {
			return ev.Method == "CONNECT" && strings.Contains(ev.Reason, `Host "other.test"`) && ev.Sent > 0
		})
	}, 30*time.Second, 50*time.Millisecond, "a second request naming another host in an allowed tunnel: denied, after the first was carried")

	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.dialed {
		assert.Contains(t, []string{"allowed.test:80", "allowed.test:443"}, d, "only what the policy allows is dialed")
	}
	t.Logf("%d decisions, %d dials: %q", len(f.events), len(f.dialed), f.dialed)
}
