package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// egressFixture is the "internet" of an egress test: servers on the
// host's loopback that the policy's Dial maps test names to, and the
// decisions the policy logged.
type egressFixture struct {
	mu     sync.Mutex
	names  map[string]string // host:port → a loopback server's address
	events []sandbox.EgressEvent
	dialed []string
}

func newEgressFixture(t *testing.T) *egressFixture {
	f := &egressFixture{names: map[string]string{}}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	})
	plain := httptest.NewServer(hello)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(hello)
	t.Cleanup(tlsSrv.Close)
	for _, name := range []string{"allowed.test", "other.test", "files.pkg.test"} {
		f.names[name+":80"] = plain.Listener.Addr().String()
		f.names[name+":443"] = tlsSrv.Listener.Addr().String()
	}
	return f
}

func (f *egressFixture) policy(allow ...string) sandbox.EgressPolicy {
	return sandbox.EgressPolicy{
		Allow: allow,
		Log: func(ev sandbox.EgressEvent) {
			f.mu.Lock()
			f.events = append(f.events, ev)
			f.mu.Unlock()
		},
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			f.mu.Lock()
			to, ok := f.names[address]
			f.dialed = append(f.dialed, address)
			f.mu.Unlock()
			if !ok {
				return nil, fmt.Errorf("no test server for %s", address)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		},
	}
}

// eventFor waits for the decision about host:port.
func (f *egressFixture) eventFor(t *testing.T, host string, port int) sandbox.EgressEvent {
	t.Helper()
	var ev sandbox.EgressEvent
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i := len(f.events) - 1; i >= 0; i-- {
			if f.events[i].Host == host && f.events[i].Port == port {
				ev = f.events[i]
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "a decision about %s:%d", host, port)
	return ev
}

// egressSandbox makes a sandbox with the policy and the probe in it.
func egressSandbox(t *testing.T, p sandbox.EgressPolicy, opts ...sandbox.Option) *sandbox.Sandbox {
	t.Helper()
	probe := toolBinary(t, "internal/testenv/egressprobe")
	sb := newSandbox(t, testenv.BusyboxImage, append(opts, sandbox.WithEgress(p))...)
	ctx := testCtx(t)
	res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "/tmp/probe", Content: probe}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	mustSh(t, sb, "chmod 755 /tmp/probe")
	return sb
}

// asRoot runs a command as root: ExecUser("0") on Docker; on Kubernetes,
// where a pod's processes all run as its user, the image's (root in the
// test images).
func asRoot() sandbox.ExecOption {
	if testenv.Relayed() {
		return sandbox.ExecUser("")
	}
	return sandbox.ExecUser("0")
}

// probe runs the probe in the sandbox as root and returns its line.
func probe(t *testing.T, sb *sandbox.Sandbox, args ...string) string {
	t.Helper()
	res, err := sb.Execute(testCtx(t), "/tmp/probe "+strings.Join(args, " "), asRoot(), sandbox.ExecTimeout(40*time.Second))
	require.NoError(t, err)
	return strings.TrimSpace(res.Output)
}

// A sandbox with an egress policy reaches what the policy allows, through
// the proxy its environment names, and nothing else; each decision
// reaches the program.
func TestEgressPolicy(t *testing.T) {
	t.Parallel()
	f := newEgressFixture(t)
	var audit auditLog
	sb := egressSandbox(t, f.policy("allowed.test", "*.pkg.test:443"), sandbox.WithAudit(audit.handler()))

	out := probe(t, sb, "get", "http://allowed.test/path")
	assert.Equal(t, "ok 200 hello from allowed.test", out, "plain HTTP to an allowed name")
	ev := f.eventFor(t, "allowed.test", 80)
	assert.True(t, ev.Allowed)
	assert.Equal(t, "GET", ev.Method)
	assert.Equal(t, "allowed.test", ev.Rule)
	assert.Equal(t, int64(len("hello from allowed.test")), ev.Received)

	out = probe(t, sb, "get", "https://files.pkg.test/")
	assert.Equal(t, "ok 200 hello from files.pkg.test", out, "HTTPS (a CONNECT) to an allowed suffix")
	ev = f.eventFor(t, "files.pkg.test", 443)
	assert.True(t, ev.Allowed)
	assert.Equal(t, "CONNECT", ev.Method)
	assert.Positive(t, ev.Sent)
	assert.Positive(t, ev.Received)

	out = probe(t, sb, "get", "http://other.test/")
	assert.Contains(t, out, "ok 403", "a name the policy does not allow")
	ev = f.eventFor(t, "other.test", 80)
	assert.False(t, ev.Allowed)
	out = probe(t, sb, "get", "http://files.pkg.test/")
	assert.Contains(t, out, "ok 403", "an allowed suffix on another port")

	// Each decision is an audit record too.
	egressRecord := func(host string, port int, outcome string) map[string]any {
		for _, r := range audit.records(t) {
			if r["op"] == "egress" && r["host"] == host && r["port"] == float64(port) && r["outcome"] == outcome {
				return r
			}
		}
		t.Errorf("no audit record of %s:%d %s: %v", host, port, outcome, audit.records(t))
		return nil
	}
	if r := egressRecord("allowed.test", 80, "allowed"); r != nil {
		assert.Equal(t, "sandbox egress", r["msg"])
		assert.Equal(t, "INFO", r["level"])
		assert.Equal(t, sb.ID(), r["sandbox"])
		assert.Equal(t, "GET", r["method"])
		assert.Equal(t, "allowed.test", r["rule"])
		assert.Equal(t, float64(0), r["sent"])
		assert.Equal(t, float64(len("hello from allowed.test")), r["received"])
		start, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r["start"]))
		assert.NoError(t, err)
		assert.WithinDuration(t, time.Now(), start, 5*time.Minute)
		assert.GreaterOrEqual(t, r["duration"], float64(0))
	}
	if r := egressRecord("files.pkg.test", 443, "allowed"); r != nil {
		assert.Equal(t, "CONNECT", r["method"])
		assert.Positive(t, r["sent"])
		assert.Positive(t, r["received"])
	}
	if r := egressRecord("other.test", 80, "denied"); r != nil {
		assert.Equal(t, "WARN", r["level"])
		assert.Contains(t, r["reason"], "denied")
		assert.Nil(t, r["rule"])
	}

	// busybox's wget honours http_proxy as curl, pip and git do.
	res, err := sb.Execute(testCtx(t), "wget -q -O- http://allowed.test/wget")
	require.NoError(t, err)
	assert.Equal(t, "hello from allowed.test", res.Output)

	// The policy changes on the live sandbox.
	f.mu.Lock()
	before := len(f.dialed)
	f.mu.Unlock()
	require.NoError(t, sb.SetEgress(f.policy("other.test")))
	assert.Contains(t, probe(t, sb, "get", "http://allowed.test/"), "ok 403")
	assert.Equal(t, "ok 200 hello from other.test", probe(t, sb, "get", "http://other.test/"))
	assert.ErrorIs(t, sb.SetEgress(sandbox.EgressPolicy{Allow: []string{"bad name"}}), sandbox.ErrInvalidOption)
	assert.Equal(t, "ok 200 hello from other.test", probe(t, sb, "get", "http://other.test/"), "a refused policy changes nothing")

	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.dialed[before:] {
		assert.NotEqual(t, "allowed.test:80", d, "nothing was dialed after the change: %v", f.dialed)
	}
}

// Root in the sandbox tries every way around the proxy: a direct
// address, another resolver over UDP and TCP, a raw socket, IPv6, its own
// /etc/hosts, a tunnel to an allowed name carrying TLS for another, and a
// tunnel straight to an address. None reaches anything; only what the
// policy allows is ever dialed.
func TestEgressAttacks(t *testing.T) {
	t.Parallel()
	f := newEgressFixture(t)
	sb := egressSandbox(t, f.policy("allowed.test"))

	for _, c := range []struct {
		name string
		args []string
	}{
		{"a direct address", []string{"tcp", "192.0.2.10:80"}},
		{"IPv6", []string{"tcp", "[2001:db8::10]:443"}},
		{"DNS over UDP", []string{"udp", "192.0.2.53:53"}},
		{"DNS over TCP", []string{"tcp", "192.0.2.53:53"}},
		{"DNS over HTTPS to an address", []string{"get", "https://192.0.2.1/dns-query"}},
		{"the system resolver", []string{"resolve", "allowed.test"}},
		{"a raw socket", []string{"raw", "192.0.2.10"}},
		{"a tunnel to an allowed name with TLS for another", []string{"sni", "allowed.test:443", "other.test"}},
		{"a tunnel to an address", []string{"sni", "127.0.0.1:443", "allowed.test"}},
	} {
		out := probe(t, sb, c.args...)
		assert.True(t, strings.HasPrefix(out, "error") || strings.HasPrefix(out, "ok 403"), "%s: %s", c.name, out)
	}
	ev := f.eventFor(t, "allowed.test", 443)
	assert.False(t, ev.Allowed, "the TLS for another name was denied")
	assert.Contains(t, ev.Reason, "other.test")
	// No interface but loopback: no gateway, no route to this machine or
	// any other (seen without sending a packet). (A pod has the cluster's
	// interface, which its namespace's NetworkPolicy isolates: the direct
	// address above is its test.)
	out := probe(t, sb, "ifaces", "-")
	if !testenv.Relayed() {
		assert.True(t, strings.HasPrefix(out, "ok lo") && !strings.Contains(out, ","), "the interfaces: %s", out)
	}

	// Every request is decided, not only a connection's first: a Host
	// header naming another host is refused after an allowed request, in
	// a proxy request (absolute URL) as in a tunnel.
	out = probe(t, sb, "requests", "http://allowed.test/", "allowed.test", "other.test")
	assert.True(t, strings.HasPrefix(out, "ok 200:hello from allowed.test | 403:"), "a proxy request's Host: %s", out)
	out = probe(t, sb, "requests", "allowed.test:80", "allowed.test", "other.test")
	assert.Equal(t, "ok 200:hello from allowed.test | closed", out, "a tunnel's second request's Host")
	for _, method := range []string{"GET", "CONNECT"} {
		assert.Eventually(t, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return slices.ContainsFunc(f.events, func(ev sandbox.EgressEvent) bool {
				return ev.Method == method && ev.Host == "allowed.test" && ev.Port == 80 && !ev.Allowed && strings.Contains(ev.Reason, `Host "other.test"`)
			})
		}, 10*time.Second, 20*time.Millisecond, "the %s naming other.test is denied and logged", method)
	}

	// Its own hosts file and resolver change nothing: names resolve on the
	// host, and only once allowed.
	// (Under the secure profile the root filesystem is read-only: root
	// cannot write them, and the attack ends there.)
	if !secureProfile() {
		mustSh(t, sb, "echo '192.0.2.66 other.test allowed.test' >> /etc/hosts && echo 'nameserver 192.0.2.53' > /etc/resolv.conf", asRoot())
	}
	assert.Equal(t, "ok 200 hello from allowed.test", probe(t, sb, "get", "http://allowed.test/"))
	assert.Contains(t, probe(t, sb, "get", "http://other.test/"), "ok 403")
	// With the proxy ignored, nothing works: it fails closed.
	// (busybox's wget -T crashes: no -T.)
	res, err := sb.Execute(testCtx(t), "unset HTTP_PROXY http_proxy; wget -q -O- http://allowed.test/ 2>&1; echo exit=$?")
	require.NoError(t, err)
	assert.NotContains(t, res.Output, "hello", "a program that ignores the proxy")
	if !secureProfile() {
		assert.Contains(t, res.Output, "Network is unreachable", "its own /etc/hosts names an address it has no route to")
	}
	assert.Contains(t, res.Output, "exit=1")

	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.dialed {
		assert.Contains(t, []string{"allowed.test:80", "allowed.test:443"}, d, "only what the policy allows is dialed")
	}
}

// WithEgress takes the sandbox's network: it excludes another network
// mode and DNS servers, and an entry it cannot parse is refused before
// anything is made.
func TestEgressOptions(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	for _, opts := range [][]sandbox.Option{
		{sandbox.WithEgress(sandbox.EgressPolicy{Allow: []string{"exa mple.com"}})},
		{sandbox.WithEgress(sandbox.EgressPolicy{}), sandbox.WithNetworkMode("bridge")},
		{sandbox.WithEgress(sandbox.EgressPolicy{}), sandbox.WithDNS("192.0.2.53")},
		// The network behind the policy's back: the proxy is the only way out.
		{sandbox.WithEgress(sandbox.EgressPolicy{}), sandbox.WithContainerConfig(func(_ *container.Config, h *container.HostConfig) { h.NetworkMode = "bridge" })},
		{sandbox.WithEgress(sandbox.EgressPolicy{}), sandbox.WithContainerConfig(func(_ *container.Config, h *container.HostConfig) { h.NetworkMode = "host" })},
	} {
		sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, opts...)...)
		if !assert.ErrorIs(t, err, sandbox.ErrInvalidOption) && err == nil {
			sb.Close()
		}
	}
	sb := newSandbox(t, testenv.BusyboxImage)
	assert.ErrorIs(t, sb.SetEgress(sandbox.EgressPolicy{}), sandbox.ErrInvalidOption, "a sandbox made without a policy")
}

// TestEgressSnapshotFork: a fork of a sandbox WithEgress has no network
// (the policy is the host process's: the fork gets one only by WithEgress
// of its own), whether the snapshot was taken through New's handle or
// through Attach's, which does not know the policy.
func TestEgressSnapshotFork(t *testing.T) {
	testenv.RequireDocker(t, "snapshots are Docker images (commit)")
	t.Parallel()
	ctx := testCtx(t)
	f := newEgressFixture(t)
	sb := egressSandbox(t, f.policy("allowed.test"))
	other, err := sandbox.Attach(ctx, sb.ID(), onEngine()...)
	require.NoError(t, err)
	defer other.Detach()
	for name, h := range map[string]*sandbox.Sandbox{"New's handle": sb, "Attach's handle": other} {
		snap, err := h.Snapshot(ctx)
		require.NoError(t, err, name)
		removeSnapshot(t, snap)
		fork := newSandbox(t, testenv.BusyboxImage, sandbox.WithSnapshot(snap))
		info, err := testenv.Client(t).ContainerInspect(ctx, fork.ID(), client.ContainerInspectOptions{})
		require.NoError(t, err)
		assert.Equal(t, container.NetworkMode("none"), info.Container.HostConfig.NetworkMode, "%s: the fork's network", name)
		// /proc/net/dev, not /sys/class/net: gVisor has no /sys/class/net.
		out := mustSh(t, fork, "sed -n '3,$p' /proc/net/dev | cut -d: -f1 | tr -d ' '")
		assert.Equal(t, "lo", strings.TrimSpace(out), "%s: the fork's interfaces", name)
		require.NoError(t, fork.Close())

		// Given a policy of its own, the fork reaches what it allows.
		fork = newSandbox(t, testenv.BusyboxImage, sandbox.WithSnapshot(snap), sandbox.WithEgress(f.policy("allowed.test")))
		assert.Equal(t, "ok 200 hello from allowed.test", probe(t, fork, "get", "http://allowed.test/path"), name)
		require.NoError(t, fork.Close())
	}
}

// TestEgressCABundle: the sandbox's CA bundle is made of the image's own
// wherever the image keeps it (here Fedora's path, a link to the file, as
// in Fedora and RHEL images, with no Debian bundle), and the egress CA is
// added to that file, the link kept (on Docker: Podman's archive API
// follows the link, and the bundle replaces it), where the root filesystem
// is writable.
func TestEgressCABundle(t *testing.T) {
	testenv.RequireDocker(t, "the image is a snapshot (commit)")
	t.Parallel()
	ctx := testCtx(t)
	base, err := sandbox.New(ctx, baseOptions(testenv.BusyboxImage)...)
	require.NoError(t, err)
	defer base.Close()
	_, err = base.Execute(ctx, `set -e; rm -f /etc/ssl/certs/ca-certificates.crt /etc/ssl/cert.pem
		mkdir -p /etc/pki/ca-trust/extracted/pem /etc/pki/tls/certs
		printf 'MARKER ROOTS\n' > /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem
		ln -s ../../ca-trust/extracted/pem/tls-ca-bundle.pem /etc/pki/tls/certs/ca-bundle.crt`, asRoot())
	require.NoError(t, err)
	snap, err := base.Snapshot(ctx)
	require.NoError(t, err)
	removeSnapshot(t, snap)

	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, sandbox.WithSnapshot(snap), sandbox.WithEgress(sandbox.EgressPolicy{}))...)
	require.NoError(t, err)
	defer sb.Close()
	bundle, err := sb.FS(ctx).ReadFile(".dockersandbox/ca-bundle.pem")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(bundle), "MARKER ROOTS\n"), "the image's roots first: %.80q", bundle)
	assert.Contains(t, string(bundle), "-----BEGIN CERTIFICATE-----", "then the egress CA")
	if secureProfile() {
		return // a read-only root filesystem: the system store is left alone
	}
	res, err := sb.Execute(ctx, "cat /etc/pki/tls/certs/ca-bundle.crt")
	require.NoError(t, err)
	assert.Equal(t, string(bundle), res.Output, "the system store's path holds the CA")
	if testenv.Podman(t) {
		// Podman's archive API follows the link: the library sees a file
		// there, and puts the bundle in its place.
		return
	}
	res, err = sb.Execute(ctx, "test -L /etc/pki/tls/certs/ca-bundle.crt && cat /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem")
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "the link is kept: %s", res.Output)
	assert.Equal(t, string(bundle), res.Output, "the CA is in the file the link names")
}

// testTLSServer serves h over TLS on loopback with a certificate for
// names, signed by a CA of its own, whose pool it returns.
func testTLSServer(t *testing.T, h http.Handler, names ...string) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &key.PublicKey, caKey)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return srv, pool
}

// A credential reaches its destination from the egress, HTTPS included,
// and never the sandbox: not its environment, files or any process's
// memory; a redirect to another host does not carry it.
func TestEgressCredentials(t *testing.T) {
	t.Parallel()
	const secret = "ghp_s3cr3t-the-sandbox-never-sees-0123456789"
	var mu sync.Mutex
	got := map[string][]string{} // host → the Authorization headers of each request it received
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Host] = append(got[r.Host], strings.Join(r.Header.Values("Authorization"), ","))
		mu.Unlock()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "https://other.test/landed", http.StatusFound)
			return
		}
		fmt.Fprintf(w, "%s authorized=%v", r.Host, r.Header.Get("Authorization") == "Bearer "+secret)
	})
	srv, pool := testTLSServer(t, h, "api.github.test", "other.test")
	// The destination's plain HTTP port: the credential must never reach it.
	var plainSaw []string // each request's Authorization headers
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		plainSaw = append(plainSaw, strings.Join(r.Header.Values("Authorization"), ","))
		mu.Unlock()
		fmt.Fprint(w, "plain")
	}))
	t.Cleanup(plain.Close)
	f := newEgressFixture(t)
	f.names["api.github.test:443"] = srv.Listener.Addr().String()
	f.names["api.github.test:80"] = plain.Listener.Addr().String()
	f.names["other.test:443"] = srv.Listener.Addr().String()
	p := f.policy("api.github.test", "other.test")
	p.TLSConfig = &tls.Config{RootCAs: pool}
	p.Credentials = []sandbox.EgressCredential{{Host: "api.github.test", Header: "Authorization", Value: "Bearer " + secret}}
	sb := egressSandbox(t, p)

	// The sandbox's TLS client trusts the egress's CA (SSL_CERT_FILE):
	// this GET verifies the certificate.
	assert.Equal(t, "ok 200 api.github.test authorized=true", probe(t, sb, "getv", "https://api.github.test/"))
	// The sandbox's own Authorization is replaced: the destination sees
	// the credential alone.
	assert.Equal(t, "ok 200 api.github.test authorized=true", probe(t, sb, "getv", "https://api.github.test/", "Authorization", "'Bearer the-sandbox-own'"))
	mu.Lock()
	assert.Equal(t, []string{"Bearer " + secret, "Bearer " + secret}, got["api.github.test"], "what the destination received")
	mu.Unlock()
	// (other.test's tunnel is not terminated: the test server's own
	// certificate, which the sandbox does not know, is what it sees.)
	assert.Equal(t, "ok 200 other.test authorized=false", probe(t, sb, "get", "https://api.github.test/redirect"),
		"the redirect to another host does not carry the credential")
	mu.Lock()
	assert.Equal(t, []string{""}, got["other.test"], "other.test never got it")
	mu.Unlock()

	// A placeholder the sandbox's tools send is replaced, and only that.
	p.Credentials = []sandbox.EgressCredential{{Host: "api.github.test", Header: "Authorization", Value: secret, Placeholder: "PLACEHOLDER"}}
	require.NoError(t, sb.SetEgress(p))
	assert.Equal(t, "ok 200 api.github.test authorized=true", probe(t, sb, "getv", "https://api.github.test/", "Authorization", "'Bearer PLACEHOLDER'"))
	assert.Equal(t, "ok 200 api.github.test authorized=false", probe(t, sb, "getv", "https://api.github.test/"), "no placeholder, no credential")

	// Plain HTTP never carries it, whichever way the sandbox asks: to the
	// credential's own port (443) the proxy refuses it (403, saying to use
	// https://); port 80 is another destination, which gets the request
	// as sent, the placeholder unreplaced, through the proxy's absolute
	// URL or in a tunnel.
	out := probe(t, sb, "get", "http://api.github.test:443/")
	assert.True(t, strings.HasPrefix(out, "ok 403 ") && strings.Contains(out, "https://"), "plain HTTP to the credential's port: %s", out)
	assert.Equal(t, "ok 200 plain", probe(t, sb, "getv", "http://api.github.test/", "Authorization", "'Bearer PLACEHOLDER'"))
	assert.Equal(t, "ok 200:plain | 200:plain", probe(t, sb, "requests", "api.github.test:80", "api.github.test", "api.github.test"))
	assert.Equal(t, "ok 200:plain", probe(t, sb, "requests", "http://api.github.test/", "api.github.test"))
	mu.Lock()
	assert.Equal(t, []string{"Bearer PLACEHOLDER", "", "", ""}, plainSaw, "what the plain HTTP port received")
	mu.Unlock()

	// The secret is nowhere in the sandbox.
	hexSecret := fmt.Sprintf("%x", secret)
	// (Under the secure profile root has no capabilities: the helpers'
	// processes, nobody's, are not readable, and are left out.)
	res, err := sb.Execute(testCtx(t), "cat /proc/*/environ 2>/dev/null | grep -c "+secret[:12]+"; grep -rl "+secret[:12]+" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo done",
		asRoot(), sandbox.ExecTimeout(60*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "0\ndone\n", res.Output, "no environment, no file holds it")
	// The helpers' processes are searched too (where root may read them:
	// not under the secure profile), the shared channel's, which carries
	// the egress, among them (asserted on Docker, where PID 1 is the
	// helper).
	res, err = sb.Execute(testCtx(t), `for d in /proc/[0-9]*; do case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in *sandbox-helper\ serve\ ) echo ${d#/proc/};; esac; done`, asRoot())
	require.NoError(t, err)
	servePID := strings.TrimSpace(res.Output)
	out = probe(t, sb, "memsearch", hexSecret)
	t.Logf("the helper's channel: pid %s; %s", servePID, out)
	if strings.HasPrefix(out, "ok searched 0 processes") && strings.Contains(os.Getenv("DOCKERSANDBOX_TEST_RUNTIME"), "runsc") {
		t.Log("gVisor gives no process's memory (/proc/PID/mem): the memory search is left out")
	} else {
		assert.True(t, strings.HasPrefix(out, "ok searched"), "no process's memory holds it: %s", out)
		if !secureProfile() && !testenv.Relayed() {
			assert.Contains(t, out, " 1(sandbox-helper)", "the helper that is PID 1 was searched")
			assert.Contains(t, out, " "+servePID+"(sandbox-helper)", "the shared channel's helper was searched")
		}
		// The search finds what is there: the proxy's address is in every
		// process's environment.
		out = probe(t, sb, "memsearch", fmt.Sprintf("%x", "http://"+sandbox.EgressProxyAddr))
		assert.True(t, strings.HasPrefix(out, "error found in"), "the search's control: %s", out)
	}
	// The CA's key is not in the sandbox either: only its certificate.
	res, err = sb.Execute(testCtx(t), "grep -rl 'PRIVATE KEY' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo done", asRoot(), sandbox.ExecTimeout(60*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "done\n", res.Output)
}

// The egress lives with the handle: once it is detached the sandbox has
// no way out at all (it fails closed); Attach with WithEgress serves it
// again, from another handle. A sandbox made without a policy keeps its
// network: Attach refuses to give it one.
func TestEgressAttach(t *testing.T) {
	t.Parallel()
	f := newEgressFixture(t)
	sb := egressSandbox(t, f.policy("allowed.test"))
	assert.Equal(t, "ok 200 hello from allowed.test", probe(t, sb, "get", "http://allowed.test/"))
	id := sb.ID()
	sb.Detach()
	t.Cleanup(func() { removeBox(t, id) })

	ctx := testCtx(t)
	other, err := sandbox.Attach(ctx, id, append(onEngine(), sandbox.WithEgress(f.policy("other.test")))...)
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	assert.Equal(t, "ok 200 hello from other.test", probe(t, other, "get", "http://other.test/"))
	assert.Contains(t, probe(t, other, "get", "http://allowed.test/"), "ok 403", "the new handle's policy")
	other.Detach()
	// No handle: no egress.
	res, err := sandbox.Attach(ctx, id, onEngine()...)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(probe(t, res, "get", "http://other.test/"), "error"), "no handle serves the egress: it fails closed")
	res.Detach()

	plain := newSandbox(t, testenv.BusyboxImage)
	_, err = sandbox.Attach(ctx, plain.ID(), append(onEngine(), sandbox.WithEgress(f.policy("allowed.test")))...)
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
}

// TestEgressHandOver: a handle's egress frees the proxy's address inside
// the sandbox as it stops, before its channel ends, so that another handle
// serves the sandbox at once, even where the engine keeps the first
// handle's helper running after the library hung up (lingerEngine plays
// Podman 4.3 under load, which did).
func TestEgressHandOver(t *testing.T) {
	t.Parallel()
	if secureProfile() {
		t.Skip("the sandbox is made through a relayed engine: the profile is the plain one's")
	}
	f := newEgressFixture(t)
	ctx := testCtx(t)
	base := testEngine(t)
	le := &lingerEngine{Engine: base}
	t.Cleanup(le.release)
	sb, err := sandbox.New(ctx, sandbox.WithEngine(le), sandbox.WithImage(testenv.BusyboxImage), sandbox.WithEgress(f.policy("allowed.test")))
	require.NoError(t, err)
	id := sb.ID()
	t.Cleanup(func() { removeBox(t, id) })
	res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "/tmp/probe", Content: toolBinary(t, "internal/testenv/egressprobe")}})
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	mustSh(t, sb, "chmod 755 /tmp/probe")
	assert.Equal(t, "ok 200 hello from allowed.test", probe(t, sb, "get", "http://allowed.test/"))
	sb.Detach()

	other, err := sandbox.Attach(ctx, id, sandbox.WithEngine(base), sandbox.WithEgress(f.policy("other.test")))
	require.NoError(t, err)
	defer other.Detach()
	assert.Equal(t, "ok 200 hello from other.test", probe(t, other, "get", "http://other.test/"), "the new handle serves the egress")
}

// TestEgressSecondHandle: while a handle serves a sandbox's egress, Attach
// WithEgress from another fails, naming the cause, instead of leaving its
// policy silently out of force (the first handle's proxy would decide);
// the first handle's egress goes on.
func TestEgressSecondHandle(t *testing.T) {
	t.Parallel()
	f := newEgressFixture(t)
	sb := egressSandbox(t, f.policy("allowed.test"))
	ctx := testCtx(t)
	other, err := sandbox.Attach(ctx, sb.ID(), append(onEngine(), sandbox.WithEgress(f.policy("other.test")))...)
	if err == nil {
		other.Detach()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another handle's")
	assert.Equal(t, "ok 200 hello from allowed.test", probe(t, sb, "get", "http://allowed.test/"), "the first handle's egress goes on")
	assert.Contains(t, probe(t, sb, "get", "http://other.test/"), "ok 403", "under its own policy")
}

// The secret never crosses the helper's channel, either way. The channel
// (an exec's attached stream) is recorded where no code under test can
// leave anything out: every byte between this process and the Docker
// daemon, through the client's dialer. Each layer is undone before the
// search, so that no boundary splits the secret unseen: HTTP bodies,
// Docker's multiplexing of an exec's output, the helper's frames, and the
// data of each stream put together.
func TestEgressCredentialOffTheChannel(t *testing.T) {
	t.Parallel()
	if testenv.Engine() != nil {
		t.Skip("records the connections to a Docker daemon")
	}
	sock := dockerSocket(t)
	rec := &apiRecorder{}
	eng, err := sandbox.DockerEngine(testCtx(t), client.FromEnv, client.WithDialContext(func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", sock)
		if err != nil {
			return nil, err
		}
		return rec.wrap(c), nil
	}))
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })

	const secret = "ghp_0ff-the-channel-s3cr3t-9876543210"
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s authorized=%v", r.Host, r.Header.Get("Authorization") == "Bearer "+secret)
	})
	srv, pool := testTLSServer(t, h, "api.github.test")
	f := newEgressFixture(t)
	f.names["api.github.test:443"] = srv.Listener.Addr().String()
	p := f.policy("api.github.test", "allowed.test")
	p.TLSConfig = &tls.Config{RootCAs: pool}
	p.Credentials = []sandbox.EgressCredential{{Host: "api.github.test", Header: "Authorization", Value: "Bearer " + secret}}
	// WithDirectPorts(false): the channel's frames go through the daemon's
	// connection, recorded here (over the port socket they carry the same).
	sb := egressSandbox(t, p, sandbox.WithEngine(eng), sandbox.WithDirectPorts(false))

	assert.Equal(t, "ok 200 api.github.test authorized=true", probe(t, sb, "getv", "https://api.github.test/"))
	// The search's controls: a request's line and a response's body,
	// which cross the channel in a stream's data only (the command says
	// neither).
	assert.Equal(t, "ok 200 hello from allowed.test", probe(t, sb, "get", "http://allowed.test/control-path"))

	toHost, toHelper := rec.layers(t)
	assert.True(t, slices.ContainsFunc(toHost, func(b []byte) bool { return bytes.Contains(b, []byte("GET http://allowed.test/control-path HTTP/1.1")) }),
		"the control: the sandbox's request in the helper's frames")
	assert.True(t, slices.ContainsFunc(toHelper, func(b []byte) bool { return bytes.Contains(b, []byte("hello from allowed.test")) }),
		"the control: the response in the library's frames")
	for _, b := range append(toHost, toHelper...) {
		require.False(t, bytes.Contains(b, []byte(secret)), "the secret crossed the Docker API connection")
	}
	t.Logf("searched %d layers toward the host, %d toward the helper", len(toHost), len(toHelper))
}

// dockerSocket returns the Unix socket of the Docker daemon the tests
// use, or skips t when it is not one.
func dockerSocket(t *testing.T) string {
	t.Helper()
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	sock, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		t.Skipf("the daemon is not at a Unix socket: %s", host)
	}
	return sock
}

// apiRecorder records the connections to the daemon, both ways.
type apiRecorder struct {
	mu    sync.Mutex
	conns []*recordedConn
}

// recordLimit bounds what one direction of a connection records.
const recordLimit = 256 << 20

type recordedConn struct {
	net.Conn
	mu       sync.Mutex
	sent     bytes.Buffer // to the daemon
	received bytes.Buffer // from it
	overflow bool
}

func (r *apiRecorder) wrap(c net.Conn) net.Conn {
	rc := &recordedConn{Conn: c}
	r.mu.Lock()
	r.conns = append(r.conns, rc)
	r.mu.Unlock()
	return rc
}

func (c *recordedConn) record(buf *bytes.Buffer, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if buf.Len()+len(p) > recordLimit {
		c.overflow = true
		return
	}
	buf.Write(p)
}

func (c *recordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.record(&c.received, p[:n])
	return n, err
}

func (c *recordedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.record(&c.sent, p[:n])
	return n, err
}

// CloseWrite keeps the half-close of the connection it wraps.
func (c *recordedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// layers returns what was recorded toward the helper and toward this
// process, each direction of each connection as it went, and undone: the
// HTTP messages' bodies; after an upgrade (an exec's attach), the stream,
// its output demultiplexed, and the helper's frames in it: each frame's
// payload and each stream's data put together.
func (r *apiRecorder) layers(t *testing.T) (toHost, toHelper [][]byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.mu.Lock()
		require.False(t, c.overflow, "a connection recorded more than %d bytes", recordLimit)
		sent, received := bytes.Clone(c.sent.Bytes()), bytes.Clone(c.received.Bytes())
		c.mu.Unlock()
		toHelper = append(toHelper, sent)
		toHelper = append(toHelper, undoHTTP(sent, true, false)...)
		toHost = append(toHost, received)
		toHost = append(toHost, undoHTTP(received, false, true)...)
	}
	return toHost, toHelper
}

// undoHTTP returns the bodies of the HTTP messages in b (requests, or
// responses), and, once one upgrades the connection, the layers of what
// follows (demux: Docker's multiplexed output).
func undoHTTP(b []byte, requests, demux bool) [][]byte {
	var out [][]byte
	br := bufio.NewReader(bytes.NewReader(b))
	for {
		var body io.ReadCloser
		upgraded := false
		if requests {
			req, err := http.ReadRequest(br)
			if err != nil {
				break
			}
			body, upgraded = req.Body, req.Header.Get("Upgrade") != ""
		} else {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			body, upgraded = resp.Body, resp.StatusCode == http.StatusSwitchingProtocols
		}
		data, _ := io.ReadAll(body)
		out = append(out, data)
		if upgraded {
			rest, _ := io.ReadAll(br)
			out = append(out, rest)
			if demux {
				rest = demultiplex(rest)
				out = append(out, rest)
			}
			return append(out, undoFrames(rest)...)
		}
	}
	rest, _ := io.ReadAll(br)
	return append(out, rest)
}

// demultiplex returns the stdout payloads of Docker's multiplexed stream
// b (an 8-byte header, the stream at 0, the size at 4, before each), put
// together, then what is not one.
func demultiplex(b []byte) []byte {
	var out []byte
	for len(b) >= 8 {
		n := int(binary.BigEndian.Uint32(b[4:8]))
		if b[0] > 2 || 8+n > len(b) {
			break
		}
		if b[0] == 1 {
			out = append(out, b[8:8+n]...)
		}
		b = b[8+n:]
	}
	return append(out, b...)
}

// undoFrames returns the payloads of the helper's frames in b (a 9-byte
// header: kind, ID, size), each, and the data of each stream put together.
func undoFrames(b []byte) [][]byte {
	var out [][]byte
	data := map[uint32][]byte{}
	for len(b) >= 9 {
		id, n := binary.BigEndian.Uint32(b[1:5]), int(binary.BigEndian.Uint32(b[5:9]))
		if 9+n > len(b) {
			break
		}
		out = append(out, b[9:9+n])
		if proto.Kind(b[0]) == proto.KindData || proto.Kind(b[0]) == proto.KindInput || proto.Kind(b[0]) == proto.KindStdout {
			data[id] = append(data[id], b[9:9+n]...)
		}
		b = b[9+n:]
	}
	for _, d := range data {
		out = append(out, d)
	}
	return out
}
