package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/egress"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/tarx"
)

// EgressPolicy limits where a sandbox's network traffic may go: once set
// (WithEgress), everything is denied but what Allow allows.
//
// The sandbox then has no network of its own (network "none": no
// interface but loopback, no resolver): its only way out is an HTTP proxy
// at EgressProxyAddr inside it, which the helper carries over its channel
// to this process, where the policy is applied, names are resolved and
// connections are made. Nothing inside the container takes part in the
// decision, so root in the container cannot widen it: raw sockets, direct
// addresses, other resolvers and IPv6 have no network to use, and editing
// /etc/hosts or /etc/resolv.conf changes nothing outside. Programs that
// honour HTTP_PROXY and HTTPS_PROXY (set in the sandbox's environment,
// with NO_PROXY for loopback) work unchanged; one that ignores them fails
// to connect (it fails closed). The egress lives with the handle that set
// it: when this process ends, the sandbox has no way out at all.
type EgressPolicy struct {
	// Allow lists the destinations: a host name ("pypi.org"), a suffix
	// ("*.pythonhosted.org": every name under it, not the name itself),
	// an IP address ("192.0.2.7", "2001:db8::1") or range ("10.0.0.0/8"),
	// each optionally with ":port" ("[2001:db8::1]:443"); without a port,
	// every port. A name allows that name only, not its addresses given
	// directly; it resolves only when allowed, and only to public
	// addresses (a name that resolves to loopback, link-local or private
	// addresses is denied unless an address rule allows those).
	Allow []string

	// Log, if not nil, receives every decision, allowed or denied; an
	// allowed one when it ends, with its bytes. It is called from the
	// proxy's goroutines and must not block. Each decision is also a
	// record of the handler of WithAudit, if any ("sandbox egress",
	// docs/egress.md).
	Log func(EgressEvent)

	// Credentials are secrets added at the egress to the requests to
	// their destinations, HTTPS included: the sandbox never holds them
	// (see EgressCredential). A credential's destination must be allowed
	// by Allow too.
	Credentials []EgressCredential

	// TLSConfig, if not nil, is the TLS configuration of the connections
	// the egress makes itself to the destinations of Credentials (its
	// RootCAs: default the host's); ServerName is the destination's.
	TLSConfig *tls.Config

	// Dial, if not nil, connects to a destination the policy allowed,
	// given as the request named it (host:port); the default resolves a
	// name and connects as Allow says. Tests map names to their servers
	// with it; a program can send everything through its own proxy.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// EgressCredential adds a secret to the requests to one destination, at
// the egress. A tunnel (HTTPS) to that destination is terminated there
// with a certificate of the sandbox's own CA, created for it, whose key
// never enters the container and whose certificate it trusts (the system
// store where the root filesystem is writable, and SSL_CERT_FILE,
// REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO and
// NODE_EXTRA_CA_CERTS); each request is checked (its Host must be the
// destination), given the credential, and sent on over the egress's own
// TLS. Another destination never gets it: a redirect elsewhere is a new
// request, to a destination of its own. The secret is taken out of the
// response's headers; a destination that echoes it in a body hands it
// over, which the egress cannot see.
type EgressCredential struct {
	// Host is the destination: a name or "*.suffix", optionally with
	// ":port" (default 443).
	Host string
	// Header is the header that carries the secret ("Authorization").
	Header string
	// Value is the secret: the header's whole value ("Bearer ghp_..."),
	// or, with a Placeholder, what replaces the placeholder ("ghp_...").
	Value string
	// Placeholder, if not "", is what the sandbox's tools send in place of
	// the secret (a dummy token): it is replaced by Value in Header, and a
	// request without it is left alone. With no Placeholder, Header is set
	// to Value, replacing what the sandbox sent.
	Placeholder string
}

// EgressEvent is one decision of a sandbox's egress: a tunnel (CONNECT,
// for HTTPS) or a plain HTTP request.
type EgressEvent struct {
	Time     time.Time     // when the request came
	Method   string        // "CONNECT", or the method of a plain HTTP request
	Host     string        // the destination's name or address
	Port     int           // and its port
	Allowed  bool          // the policy allowed it (and its first bytes matched its host)
	Rule     string        // the entry of Allow that allowed it
	Reason   string        // why it was denied, or why an allowed one failed
	Sent     int64         // bytes sent to the destination
	Received int64         // bytes received from it
	Duration time.Duration // from the request to its end
}

// EgressProxyAddr is where a sandbox with an egress policy finds its
// proxy: HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and their lower-case
// forms) say http://127.0.0.1:3128.
const EgressProxyAddr = "127.0.0.1:3128"

// Where a sandbox with an egress policy finds its CA's certificate, and
// the bundle of it and the image's own roots.
const (
	egressCAFile     = helperDir + "/egress-ca.pem"
	egressBundleFile = helperDir + "/ca-bundle.pem"
)

// systemBundles are where images keep their CA bundle, as Go's crypto/x509
// looks for it on Linux: the first found (its links followed) is the one
// the sandbox's bundle is made of and the CA added to.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Alpine, Arch (a link)
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL (a link)
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

// egressEnv is the environment of a sandbox with an egress policy.
func egressEnv() []string {
	p := "http://" + EgressProxyAddr
	return []string{"HTTP_PROXY=" + p, "HTTPS_PROXY=" + p, "ALL_PROXY=" + p,
		"http_proxy=" + p, "https_proxy=" + p, "all_proxy=" + p,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		"SSL_CERT_FILE=" + egressBundleFile, "REQUESTS_CA_BUNDLE=" + egressBundleFile,
		"CURL_CA_BUNDLE=" + egressBundleFile, "GIT_SSL_CAINFO=" + egressBundleFile,
		"NODE_EXTRA_CA_CERTS=" + egressCAFile}
}

// maxBundle bounds the image's CA bundle that the sandbox's is made of.
const maxBundle = 4 << 20

// installEgressCA puts the CA's certificate into the sandbox: its own
// file, a bundle of the image's roots and it (SSL_CERT_FILE's), and the
// system store where the root filesystem is writable (the file a link
// there names, where the engine's archive API shows links: Docker's; Podman
// follows them, and the bundle replaces the link). An image with no bundle
// where systemBundles look gets a bundle of the CA alone.
func (s *Sandbox) installEgressCA(ctx context.Context, ca *egress.CA) error {
	system, systemPath := s.systemBundle(ctx)
	bundle := append(append(slices.Clip(system), '\n'), ca.PEM()...)
	now := time.Now()
	for _, f := range []tarx.File{
		{Name: path.Base(egressCAFile), Content: ca.PEM(), Mode: 0o644, ModTime: now},
		{Name: path.Base(egressBundleFile), Content: bundle, Mode: 0o644, ModTime: now},
	} {
		r, err := tarx.NewReader(f)
		if err != nil {
			return err
		}
		if err := s.eng.CopyTo(ctx, s.id, helperDir, r); err != nil {
			return s.dockerErr("install the egress CA", err)
		}
	}
	if system != nil && !s.opts.readOnlyRootfs {
		r, err := tarx.NewReader(tarx.File{Name: path.Base(systemPath), Content: bundle, Mode: 0o644, ModTime: now})
		if err != nil {
			return err
		}
		if err := s.eng.CopyTo(ctx, s.id, path.Dir(systemPath), r); err != nil {
			return s.dockerErr("add the egress CA to the system store", err)
		}
	}
	return nil
}

// systemBundle returns the image's CA bundle and the path of the regular
// file that holds it: the first of systemBundles found, following up to
// four links; nil if none.
func (s *Sandbox) systemBundle(ctx context.Context) ([]byte, string) {
	for _, p := range systemBundles {
		for range 5 {
			rc, err := s.eng.CopyFrom(ctx, s.id, p)
			if err != nil {
				break
			}
			content, link, err := tarx.ReadFileOrLink(rc, maxBundle)
			rc.Close()
			switch {
			case err != nil:
			case link == "":
				return content, p
			case path.IsAbs(link):
				p = path.Clean(link)
				continue
			default:
				p = path.Join(path.Dir(p), link)
				continue
			}
			break
		}
	}
	return nil, ""
}

// Bounds of a sandbox's egress.
const (
	// egressAccepts is how many accepts wait for a connection at once.
	egressAccepts = 4
	// egressMaxConns bounds the connections a sandbox has through its
	// egress at once; more wait in the listener's backlog.
	egressMaxConns = 64
)

// egressState is a sandbox's egress: its policy and the accept loops.
type egressState struct {
	in     atomic.Pointer[egressInForce]
	proxy  *egress.Proxy
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{}
	// accepted counts the connections its accepts got: awaitEgress tells
	// its own listener from another handle's by it.
	accepted atomic.Int64
}

// egressInForce is the policy in force, as given and as parsed: one value,
// so that SetEgress replaces both at once.
type egressInForce struct {
	given  *EgressPolicy
	parsed *egress.Policy
}

// Validate checks the policy's entries as WithEgress and SetEgress do: an
// error wraps ErrInvalidOption and names the entry.
func (p EgressPolicy) Validate() error {
	_, err := parseEgress(p)
	return err
}

// parseEgress checks a policy.
func parseEgress(p EgressPolicy) (*egress.Policy, error) {
	pol, err := egress.Parse(p.Allow, credentials(p.Credentials))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return pol, nil
}

// credentials converts the policy's credentials.
func credentials(cs []EgressCredential) []egress.Credential {
	out := make([]egress.Credential, len(cs))
	for i, c := range cs {
		out[i] = egress.Credential(c)
	}
	return out
}

// startEgress starts the sandbox's egress with policy p: its CA made and
// installed, its accepts waiting.
func (s *Sandbox) startEgress(ctx context.Context, p *EgressPolicy, pol *egress.Policy) error {
	info, err := s.eng.Inspect(ctx, s.id)
	if err != nil {
		return s.dockerErr("egress", err)
	}
	if info.Labels[LabelEgress] != EgressProxyAddr {
		return fmt.Errorf("%w: WithEgress: sandbox %s was made without it: it has a network of its own", ErrInvalidOption, s.ID())
	}
	ca, err := egress.NewCA("dockersandbox egress " + s.ID())
	if err != nil {
		return fmt.Errorf("sandbox: egress CA: %w", err)
	}
	if err := s.installEgressCA(ctx, ca); err != nil {
		return err
	}
	e := &egressState{slots: make(chan struct{}, egressMaxConns)}
	e.in.Store(&egressInForce{given: p, parsed: pol})
	e.proxy = &egress.Proxy{
		CA:        ca,
		TLSConfig: func() *tls.Config { return e.in.Load().given.TLSConfig },
		Policy:    func() *egress.Policy { return e.in.Load().parsed },
		Log: func(ev egress.Event) {
			s.obs.egress(s.ID(), EgressEvent(ev)) // WithAudit's record
			if f := e.in.Load().given.Log; f != nil {
				f(EgressEvent(ev))
			}
		},
		Dial: func() egress.DialFunc { return e.in.Load().given.Dial },
	}
	actx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	s.egress = e
	for range egressAccepts {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			s.acceptEgress(actx, e)
		}()
	}
	return s.awaitEgress(ctx)
}

// egressReady bounds how long New waits for the proxy to listen.
const egressReady = 30 * time.Second

// awaitEgress returns once this handle's proxy listens inside the sandbox
// (the helper listens at the first accept): a connection to it, closed at
// once, is no request, and no decision. A connection that none of this
// handle's accepts gets went to another helper's listener: another handle
// serves the sandbox's egress, with its own policy, and this one fails.
func (s *Sandbox) awaitEgress(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, egressReady)
	defer cancel()
	held := false
	heldErr := func() error {
		return fmt.Errorf("sandbox %s: the egress proxy did not come up: %s in the sandbox is another handle's (Detach or Close it first)", s.ID(), EgressProxyAddr)
	}
	for {
		n := s.egress.accepted.Load()
		c, err := s.Dial(ctx, "tcp", EgressProxyAddr)
		if err == nil {
			c.Close()
			if s.egressAccepted(ctx, n) {
				return nil
			}
			held = true
		} else if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			if held && ctx.Err() != nil { // the bound ended during a dial: the verdict stands
				return heldErr()
			}
			return fmt.Errorf("sandbox %s: the egress proxy did not come up: %w", s.ID(), err)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			if held {
				return heldErr()
			}
			return fmt.Errorf("sandbox %s: the egress proxy did not come up: %w", s.ID(), ctx.Err())
		}
	}
}

// egressAccepted waits, a second at most, for this handle's accepts to
// have got more than n connections.
func (s *Sandbox) egressAccepted(ctx context.Context, n int64) bool {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(time.Second)
	for s.egress.accepted.Load() <= n {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// acceptEgress keeps one accept waiting for a connection to the sandbox's
// proxy, and serves each connection it gets, until ctx ends.
func (s *Sandbox) acceptEgress(ctx context.Context, e *egressState) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		select {
		case e.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		st, err := s.openStream(ctx, proto.Request{Op: proto.OpAccept, Network: "tcp", Address: EgressProxyAddr})
		if err == nil {
			select {
			case <-st.openC:
			default: // ended before a connection came (the listen failed)
				err = fmt.Errorf("sandbox: egress: %v", st.res)
				st.close()
			}
		}
		if err != nil {
			<-e.slots
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrGone) {
				return
			}
			select { // the channel broke, the helper is busy: again soon
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		e.accepted.Add(1)
		c := newConn(st, nil, "tcp")
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer func() { <-e.slots }()
			e.proxy.ServeConn(ctx, c)
		}()
	}
}

// stopEgress ends the sandbox's egress: its accepts and connections.
func (s *Sandbox) stopEgress() {
	if e := s.egress; e != nil {
		e.cancel()
		e.wg.Wait()
	}
}

// SetEgress replaces the egress policy of a sandbox made with WithEgress:
// the next request is decided by p (connections open already go on). A
// sandbox made without one has a network of its own, which a policy
// cannot take back: SetEgress returns ErrInvalidOption.
func (s *Sandbox) SetEgress(p EgressPolicy) (err error) {
	op := s.beginDetached("SetEgress")
	defer op.end(&err)
	if s.closed.Load() {
		return ErrClosed
	}
	e := s.egress
	if e == nil {
		return fmt.Errorf("%w: SetEgress: sandbox %s was made without WithEgress", ErrInvalidOption, s.ID())
	}
	pol, err := parseEgress(p)
	if err != nil {
		return err
	}
	e.in.Store(&egressInForce{given: &p, parsed: pol})
	return nil
}
