package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	p, err := Parse([]string{"PyPI.org.", "*.pythonhosted.org", "192.0.2.7", "10.0.0.0/8:443", "[2001:db8::1]:8080", "example.com:22"}, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		dest string
		want bool
	}{
		{"pypi.org:443", true},
		{"pypi.org:80", true},
		{"sub.pypi.org:443", false},
		{"files.pythonhosted.org:443", true},
		{"a.b.pythonhosted.org:443", true},
		{"pythonhosted.org:443", false}, // the suffix only
		{"evilpythonhosted.org:443", false},
		{"192.0.2.7:1", true},
		{"192.0.2.8:1", false},
		{"10.1.2.3:443", true},
		{"10.1.2.3:80", false},
		{"[2001:db8::1]:8080", true},
		{"[2001:db8::1]:8081", false},
		{"[::ffff:192.0.2.7]:5", true}, // a mapped address is the IPv4 one
		{"example.com:22", true},
		{"example.com:443", false},
	} {
		d, err := ParseDestination(c.dest, 0)
		require.NoError(t, err, c.dest)
		_, got := p.Allows(d)
		assert.Equal(t, c.want, got, c.dest)
	}
	var nilPolicy *Policy
	_, ok := nilPolicy.Allows(Destination{Host: "pypi.org", Port: 443})
	assert.False(t, ok, "a nil policy allows nothing")

	for _, bad := range []string{"", " ", "exa mple.com", "example.com:0", "example.com:99999", "example.com:", "*.", "-a.com",
		"a..b", "http://example.com", "ex\x00ample.com", "exämple.com", strings.Repeat("a", 64) + ".com"} {
		_, err := Parse([]string{bad}, nil)
		assert.ErrorIs(t, err, ErrInvalidRule, "%q", bad)
	}
	for _, bad := range []string{"example.com", "exa mple.com:80", "[fe80::1%eth0]:80", "a:99999"} {
		_, err := ParseDestination(bad, 0)
		assert.Error(t, err, "%q", bad)
	}
}

// proxyFixture serves a Proxy on loopback, with upstream servers that
// test names map to.
type proxyFixture struct {
	t      *testing.T
	url    *url.URL
	mu     sync.Mutex
	events []Event
	names  map[string]string // "host:port" → the server's address
	policy *Policy
	proxy  *Proxy
}

func newProxyFixture(t *testing.T, allow ...string) *proxyFixture {
	f := &proxyFixture{t: t, names: map[string]string{}}
	var err error
	f.policy, err = Parse(allow, nil)
	require.NoError(t, err)
	p := &Proxy{
		Policy: func() *Policy { f.mu.Lock(); defer f.mu.Unlock(); return f.policy },
		Log:    func(ev Event) { f.mu.Lock(); f.events = append(f.events, ev); f.mu.Unlock() },
		Dial: func() DialFunc {
			return func(ctx context.Context, network, address string) (net.Conn, error) {
				f.mu.Lock()
				to, ok := f.names[address]
				f.mu.Unlock()
				if !ok {
					return nil, fmt.Errorf("no test server for %s", address)
				}
				var d net.Dialer
				return d.DialContext(ctx, network, to)
			}
		},
	}
	f.proxy = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.ServeConn(ctx, c) }()
		}
	}()
	f.url = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return f
}

func (f *proxyFixture) serve(name string, srv *httptest.Server) {
	f.mu.Lock()
	f.names[name] = srv.Listener.Addr().String()
	f.mu.Unlock()
}

func (f *proxyFixture) client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(f.url),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // httptest's certificate
	}}
}

func (f *proxyFixture) lastEvent() Event {
	f.t.Helper()
	var ev Event
	require.Eventually(f.t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.events) == 0 {
			return false
		}
		ev = f.events[len(f.events)-1]
		return true
	}, 5*time.Second, 10*time.Millisecond)
	return ev
}

// eventWith waits for an event that ok accepts (the events of tunnels
// come when they end, in any order).
func (f *proxyFixture) eventWith(ok func(Event) bool) Event {
	f.t.Helper()
	var ev Event
	require.Eventually(f.t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.events {
			if ok(e) {
				ev = e
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
	return ev
}

func hello(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "hello from %s", r.Host)
}

func TestProxyPlainHTTP(t *testing.T) {
	f := newProxyFixture(t, "allowed.test")
	srv := httptest.NewServer(http.HandlerFunc(hello))
	defer srv.Close()
	f.serve("allowed.test:80", srv)
	f.serve("denied.test:80", srv)

	resp, err := f.client().Get("http://allowed.test/x")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "hello from allowed.test", string(body))
	// Each exchange's event comes when the proxy is done with it, which
	// can be after the client read its answer: found by host, not order.
	ev := f.eventWith(func(e Event) bool { return e.Host == "allowed.test" })
	assert.True(t, ev.Allowed)
	assert.Equal(t, "allowed.test", ev.Host)
	assert.Equal(t, 80, ev.Port)
	assert.Equal(t, "allowed.test", ev.Rule)
	assert.Equal(t, int64(len(body)), ev.Received)

	resp, err = f.client().Get("http://denied.test/x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("X-Dockersandbox-Egress"), "denied")
	ev = f.eventWith(func(e Event) bool { return e.Host == "denied.test" })
	assert.False(t, ev.Allowed)

	// Every request of a connection is decided, its Host headers too: a
	// Host that is not the URL's host is refused, after an allowed
	// request as on the first, and so are two Host headers.
	for _, attack := range []string{
		"GET http://allowed.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nHost: denied.test\r\n\r\n",
		"GET http://allowed.test/ HTTP/1.1\nHost: denied.test\n\n",
	} {
		c, err := net.Dial("tcp", f.url.Host)
		require.NoError(t, err)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET http://allowed.test/first HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
		resp, err = http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, _ = io.ReadAll(resp.Body)
		assert.Equal(t, "hello from allowed.test", string(body))
		io.WriteString(c, attack)
		resp, err = http.ReadResponse(br, nil)
		require.NoError(t, err)
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, resp.StatusCode, "%q", attack) // two Hosts: not a request
		c.Close()
	}
	ev = f.eventWith(func(e Event) bool { return e.Host == "allowed.test" && !e.Allowed })
	assert.Contains(t, ev.Reason, `Host "denied.test"`)
}

func TestProxyTunnel(t *testing.T) {
	f := newProxyFixture(t, "allowed.test")
	srv := httptest.NewTLSServer(http.HandlerFunc(hello))
	defer srv.Close()
	f.serve("allowed.test:443", srv)
	f.serve("other.test:443", srv)

	cl := f.client()
	resp, err := cl.Get("https://allowed.test/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello from allowed.test", string(body))
	cl.CloseIdleConnections()
	ev := f.lastEvent()
	assert.True(t, ev.Allowed)
	assert.Equal(t, "CONNECT", ev.Method)
	assert.Positive(t, ev.Sent)
	assert.Positive(t, ev.Received)

	_, err = f.client().Get("https://other.test/")
	assert.Error(t, err, "a tunnel to a host the policy does not allow")

	// A CONNECT to the allowed name whose Host header names another.
	c0, err := net.Dial("tcp", f.url.Host)
	require.NoError(t, err)
	fmt.Fprintf(c0, "CONNECT allowed.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c0), &http.Request{Method: "CONNECT"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a CONNECT's Host naming another host")
	c0.Close()

	// A tunnel to the allowed name that carries TLS for another.
	c := connect(t, f, "allowed.test:443")
	tc := tls.Client(c, &tls.Config{ServerName: "other.test", InsecureSkipVerify: true})
	assert.Error(t, tc.Handshake(), "TLS for another name in an allowed tunnel")
	c.Close()
	ev = f.eventWith(func(ev Event) bool {
		return ev.Method == "CONNECT" && ev.Host == "allowed.test" && !ev.Allowed && strings.Contains(ev.Reason, "TLS")
	})
	assert.Contains(t, ev.Reason, `TLS for "other.test"`)

	// TLS that names no server passes: its bytes go to allowed.test's
	// server only, which answers as it does for no name.
	c = connect(t, f, "allowed.test:443")
	tc = tls.Client(c, &tls.Config{InsecureSkipVerify: true}) // no ServerName: no SNI
	assert.NoError(t, tc.Handshake(), "TLS without SNI in an allowed tunnel")
	c.Close()

	// The same with plain HTTP in the tunnel: each request is read, and
	// the first that names another host ends the tunnel, however many
	// allowed ones came before, and however long its headers.
	var mu sync.Mutex
	var seen []string // the Hosts the server was asked for
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host)
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello from %s: %q", r.Host, body)
	}))
	defer plain.Close()
	f.serve("allowed.test:80", plain)
	pad := "X-Pad: " + strings.Repeat("p", 8<<10) + "\r\n"
	for _, attack := range []string{
		"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET / HTTP/1.1\r\n" + pad + "Host: other.test\r\n\r\n",
		"GET http://other.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n",
		"GET / HTTP/1.1\nHost: other.test\n\n",
	} {
		for _, before := range []int{0, 2} {
			c = connect(t, f, "allowed.test:80")
			br := bufio.NewReader(c)
			for i := range before { // allowed requests first, with bodies of both framings
				if i%2 == 0 {
					fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: allowed.test\r\n%sContent-Length: 4\r\n\r\nbody", pad)
				} else {
					fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: allowed.test:80\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
				}
				resp, err := http.ReadResponse(br, nil)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				assert.Equal(t, []string{`hello from allowed.test: "body"`, `hello from allowed.test:80: "abc"`}[i%2], string(body))
			}
			io.WriteString(c, attack)
			_, err = http.ReadResponse(br, nil)
			assert.Error(t, err, "the tunnel closes: %q after %d", attack, before)
			c.Close()
		}
	}
	mu.Lock()
	for _, h := range seen {
		assert.Contains(t, []string{"allowed.test", "allowed.test:80"}, h, "only allowed.test was asked for: %q", seen)
	}
	mu.Unlock()
	ev = f.eventWith(func(ev Event) bool {
		return ev.Method == "CONNECT" && ev.Port == 80 && !ev.Allowed && strings.Contains(ev.Reason, "other.test") && ev.Sent > 0
	})
	assert.Positive(t, ev.Sent, "the allowed requests before it were carried")
}

// connect opens a tunnel through the fixture's proxy and reads its 200.
func connect(t *testing.T, f *proxyFixture, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", f.url.Host)
	require.NoError(t, err)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Zero(t, br.Buffered())
	return c
}

func TestProxyRefusals(t *testing.T) {
	f := newProxyFixture(t, "allowed.test")
	srv := httptest.NewServer(http.HandlerFunc(hello))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, target := range []string{
		net.JoinHostPort(host, port), // a direct address
		"[::1]:" + port,
		"localhost:" + port,
		"allowed.test.evil:443",
		"allowed.test:0",
		"allowed.test",
		"exa mple:80",
	} {
		c, err := net.Dial("tcp", f.url.Host)
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err == nil {
			assert.NotEqual(t, 200, resp.StatusCode, target)
		}
		c.Close()
	}

	// Headers without end are cut at maxHeader.
	c, err := net.Dial("tcp", f.url.Host)
	require.NoError(t, err)
	defer c.Close()
	go func() {
		fmt.Fprintf(c, "GET http://allowed.test/ HTTP/1.1\r\n")
		line := "X-A: " + strings.Repeat("a", 1000) + "\r\n"
		for range 200 {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	// Not a proxy request.
	c2, err := net.Dial("tcp", f.url.Host)
	require.NoError(t, err)
	defer c2.Close()
	fmt.Fprintf(c2, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c2), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// The default dialer resolves an allowed name, and refuses the addresses
// that are not public unless an address rule allows them.
func TestDialAllowedGuardsAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hello))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	pol, err := Parse([]string{"localhost"}, nil)
	require.NoError(t, err)
	p := &Proxy{Policy: func() *Policy { return pol }}
	_, err = p.dialAllowed(context.Background(), "tcp", "localhost:"+port)
	assert.ErrorIs(t, err, errDenied, "localhost is loopback")

	pol, err = Parse([]string{"localhost", "127.0.0.0/8"}, nil)
	require.NoError(t, err)
	c, err := p.dialAllowed(context.Background(), "tcp", "localhost:"+port)
	require.NoError(t, err, "an address rule allows loopback")
	c.Close()

	pol, err = Parse(nil, nil)
	require.NoError(t, err)
	_, err = p.dialAllowed(context.Background(), "tcp", "localhost:"+port)
	assert.ErrorIs(t, err, errDenied, "the policy changed")
}

func TestParseCredential(t *testing.T) {
	p, err := Parse([]string{"*.github.test"}, []Credential{
		{Host: "api.github.test", Header: "authorization", Value: "Bearer s"},
		{Host: "*.uploads.test:8443", Header: "X-Key", Value: "k", Placeholder: "PH"},
	})
	require.NoError(t, err)
	d := func(s string) Destination { x, err := ParseDestination(s, 0); require.NoError(t, err); return x }
	assert.Len(t, p.credentialsFor(d("api.github.test:443")), 1)
	assert.Empty(t, p.credentialsFor(d("api.github.test:80")), "another port")
	assert.Empty(t, p.credentialsFor(d("raw.github.test:443")), "another host")
	assert.Len(t, p.credentialsFor(d("a.uploads.test:8443")), 1)
	h := http.Header{"Authorization": {"Bearer sandbox's"}, "X-Key": {"PH-PH"}}
	apply(h, p.credentialsFor(d("api.github.test:443")))
	assert.Equal(t, "Bearer s", h.Get("Authorization"), "set, replacing the sandbox's")
	apply(h, p.credentialsFor(d("a.uploads.test:8443")))
	assert.Equal(t, "k-k", h.Get("X-Key"), "the placeholder replaced")
	resp := http.Header{"Location": {"https://x/?token=Bearer s"}}
	redact(resp, p.credentialsFor(d("api.github.test:443")))
	assert.Equal(t, "https://x/?token=[redacted]", resp.Get("Location"))

	for _, bad := range []Credential{
		{Host: "192.0.2.1", Header: "A", Value: "v"},
		{Host: "api.github.test", Header: "", Value: "v"},
		{Host: "api.github.test", Header: "Bad Header", Value: "v"},
		{Host: "api.github.test", Header: "A", Value: ""},
		{Host: "api.github.test", Header: "A", Value: "v\r\nX: y"},
		{Host: "api.github.test", Header: "A", Value: "vPH", Placeholder: "PH"},
		{Host: "bad host", Header: "A", Value: "v"},
	} {
		_, err := Parse(nil, []Credential{bad})
		assert.ErrorIs(t, err, ErrInvalidRule, "%+v", bad)
	}
}

// A tunnel to a destination with a credential is terminated with the
// CA's certificate, which a client that trusts the CA verifies; the
// request goes on with the credential, another Host is refused, and the
// secret is taken out of the response's headers.
func TestIntercept(t *testing.T) {
	var got []string
	var mu sync.Mutex
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		fmt.Fprint(w, "ok")
	}))
	defer upstream.Close()
	f := newProxyFixture(t, "api.test")
	f.serve("api.test:443", upstream)
	pol, err := Parse([]string{"api.test"}, []Credential{{Host: "api.test", Header: "Authorization", Value: "Bearer s3cret"}})
	require.NoError(t, err)
	f.mu.Lock()
	f.policy = pol
	f.mu.Unlock()
	ca, err := NewCA("test")
	require.NoError(t, err)
	f.proxy.CA = ca
	f.proxy.TLSConfig = func() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } // httptest's certificate
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.PEM()))
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(f.url), TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := cl.Get("https://api.test/x")
	require.NoError(t, err, "the client verifies the CA's certificate for api.test")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok", string(body))
	assert.Equal(t, "[redacted]", resp.Header.Get("X-Echo"), "the secret is out of the response's headers")
	mu.Lock()
	assert.Equal(t, []string{"api.test Bearer s3cret"}, got)
	mu.Unlock()

	// Another Host inside the terminated tunnel.
	c := connect(t, f, "api.test:443")
	tc := tls.Client(c, &tls.Config{ServerName: "api.test", RootCAs: roots})
	require.NoError(t, tc.Handshake())
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(tc), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	c.Close()
	// TLS for another name.
	c = connect(t, f, "api.test:443")
	assert.Error(t, tls.Client(c, &tls.Config{ServerName: "other.test", RootCAs: roots}).Handshake())
	c.Close()

	// Plain HTTP to a destination with a credential is refused, not sent
	// without it (nor with it, in the clear).
	pol, err = Parse([]string{"api.test"}, []Credential{{Host: "api.test:80", Header: "Authorization", Value: "Bearer s3cret"}})
	require.NoError(t, err)
	f.mu.Lock()
	f.policy = pol
	f.mu.Unlock()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, "plain "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer plain.Close()
	f.serve("api.test:80", plain)
	resp, err = f.client().Get("http://api.test/x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("X-Dockersandbox-Egress"), "TLS only")
	ev := f.eventWith(func(e Event) bool { return e.Host == "api.test" && e.Port == 80 })
	assert.False(t, ev.Allowed)
	mu.Lock()
	assert.Equal(t, []string{"api.test Bearer s3cret"}, got, "nothing reached the plain server")
	mu.Unlock()
}
