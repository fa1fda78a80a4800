package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// Credential adds a secret to the requests to a destination, at the
// egress: the sandbox never holds it. A tunnel to a destination with a
// credential is terminated at the proxy with a certificate of the
// sandbox's CA (whose key stays on the host), its requests read, the
// credential applied, and each sent on over TLS of the proxy's own. A
// plain-HTTP request to the destination is refused (403): the secret never
// crosses the network in the clear.
type Credential struct {
	// Host is the destination: a name, or "*.suffix", optionally with
	// ":port" (default 443).
	Host string
	// Header is the header that carries the secret ("Authorization").
	Header string
	// Value is the secret: the header's value, or, with a Placeholder,
	// what replaces it.
	Value string
	// Placeholder, if not "", is what the sandbox sends in the header in
	// place of the secret (a dummy token its tools are configured with):
	// it is replaced by Value, and the header is left alone where it is
	// absent. With no Placeholder the header is set to Value, replacing
	// what the sandbox sent.
	Placeholder string
}

// errPlainCredential refuses a plain-HTTP request to a destination with a
// credential: credentials are sent over TLS only.
var errPlainCredential = errors.New("the destination has a credential, sent over TLS only: use https://")

// credRule is a parsed Credential.
type credRule struct {
	Credential
	r rule
}

// parseCredential checks a credential.
func parseCredential(c Credential) (credRule, error) {
	bad := func(why string) (credRule, error) {
		return credRule{}, fmt.Errorf("%w: credential for %q: %s", ErrInvalidRule, c.Host, why)
	}
	r, err := parseRule(c.Host)
	if err != nil {
		return bad(err.Error())
	}
	if r.prefix.IsValid() {
		return bad("a credential goes to a name, not an address")
	}
	if r.port == 0 {
		r.port = 443
	}
	c.Header = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(c.Header))
	switch {
	case c.Header == "" || strings.ContainsAny(c.Header, " :\r\n\x00"):
		return bad("a header name is needed")
	case c.Value == "" || strings.ContainsAny(c.Value, "\r\n\x00"):
		return bad("the value must be a header value: not empty, one line")
	case strings.ContainsAny(c.Placeholder, "\r\n\x00"):
		return bad("the placeholder must be one line")
	case c.Placeholder != "" && strings.Contains(c.Value, c.Placeholder):
		return bad("the value contains its placeholder")
	}
	return credRule{Credential: c, r: r}, nil
}

// credentialsFor returns the credentials of a destination.
func (p *Policy) credentialsFor(d Destination) []credRule {
	if p == nil || d.IsIP() {
		return nil
	}
	var out []credRule
	for _, c := range p.creds {
		if c.r.port == d.Port && (c.r.host != "" && d.Host == c.r.host || c.r.suffix != "" && strings.HasSuffix(d.Host, c.r.suffix)) {
			out = append(out, c)
		}
	}
	return out
}

// apply puts the credentials into a request's headers.
func apply(h http.Header, creds []credRule) {
	for _, c := range creds {
		if c.Placeholder == "" {
			h.Set(c.Header, c.Value)
			continue
		}
		for i, v := range h[c.Header] {
			h[c.Header][i] = strings.ReplaceAll(v, c.Placeholder, c.Value)
		}
	}
}

// redact takes the secrets out of a response's headers (a destination
// that echoes a request's headers back in its body hands them over: that
// the proxy cannot see).
func redact(h http.Header, creds []credRule) {
	for k, vs := range h {
		for i, v := range vs {
			for _, c := range creds {
				v = strings.ReplaceAll(v, c.Value, "[redacted]")
			}
			h[k][i] = v
		}
	}
}

// CA is a sandbox's certificate authority: the certificates the proxy
// shows for the destinations it terminates. Its key never leaves the host.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// newKey makes a certificate's key and serial number.
func newKey() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	return key, serial, nil
}

// NewCA makes a CA valid for ten years.
func NewCA(name string) (*CA, error) {
	key, serial, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"dockersandbox egress"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{}}, nil
}

// PEM returns the CA's certificate, which the sandbox trusts.
func (ca *CA) PEM() []byte { return ca.pem }

// leaf returns a certificate for host signed by the CA.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.leaves[host]; c != nil {
		return c, nil
	}
	key, serial, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
	if len(ca.leaves) > 1024 {
		clear(ca.leaves)
	}
	ca.leaves[host] = c
	return c, nil
}

// bufConn is a connection whose reads start with what br buffered.
type bufConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.br.Read(p) }

// intercept serves a tunnel to d whose requests carry credentials: TLS
// terminated with the CA's certificate for d's host, each request checked
// (its Host must be d's), given its credentials and sent on over TLS to
// d. It returns the bytes sent and received and why it ended early.
func (p *Proxy) intercept(ctx context.Context, c net.Conn, br *bufio.Reader, d Destination) (sent, received int64, err error) {
	if p.CA == nil {
		return 0, 0, errors.New("no CA to terminate TLS with")
	}
	tc := tls.Server(&bufConn{Conn: c, br: br}, &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if h.ServerName != "" && !sameHost(h.ServerName, d) {
				return nil, fmt.Errorf("%w: TLS for %q in a tunnel to %s", errDenied, h.ServerName, d.Host)
			}
			return p.CA.leaf(d.Host)
		},
	})
	_ = c.SetDeadline(time.Now().Add(headerWait))
	if err := tc.HandshakeContext(ctx); err != nil {
		if errors.Is(err, errDenied) {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("TLS with the sandbox: %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	rr := newRequestReader(c, tc)
	for {
		req, err := rr.next(idleWait)
		if err != nil {
			if errors.Is(err, io.EOF) || isTimeout(err) {
				return sent, received, nil
			}
			return sent, received, err
		}
		if err := checkHosts(req, rr.hosts, d); err != nil {
			writeStatus(tc, http.StatusForbidden, err.Error())
			req.Body.Close()
			return sent, received, err
		}
		pol := p.current()
		creds := pol.credentialsFor(d)
		if _, ok := pol.Allows(d); !ok { // the policy changed
			writeStatus(tc, http.StatusForbidden, d.String()+" is "+errDenied.Error())
			req.Body.Close()
			return sent, received, fmt.Errorf("%s: %w", d, errDenied)
		}
		r, err := relay(ctx, tc, p.tlsTransport(), req, func(out *http.Request) {
			out.URL.Scheme, out.URL.Host = "https", d.Host
			if d.Port != 443 {
				out.URL.Host = d.String()
			}
			apply(out.Header, creds)
		}, func(h http.Header) { redact(h, creds) })
		sent += r.sent
		received += r.received
		if err != nil {
			writeStatus(tc, http.StatusBadGateway, "request to "+d.String()+": "+err.Error())
			return sent, received, err
		}
		if r.werr != nil {
			return sent, received, r.werr
		}
		if !r.again {
			_ = tc.CloseWrite()
			return sent, received, nil
		}
	}
}

// idleWait bounds how long a terminated tunnel waits for its next request.
const idleWait = 2 * time.Minute

// tlsTransport returns the transport of the requests intercept sends on.
func (p *Proxy) tlsTransport() *http.Transport {
	p.tlsOnce.Do(func() {
		p.tlsTr = &http.Transport{
			Proxy:               nil,
			ForceAttemptHTTP2:   false,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
			DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				raw, err := p.dialAllowed(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				d, _ := ParseDestination(addr, 443)
				var cfg *tls.Config
				if p.TLSConfig != nil {
					cfg = p.TLSConfig()
				}
				if cfg == nil {
					cfg = &tls.Config{}
				} else {
					cfg = cfg.Clone()
				}
				cfg.ServerName = d.Host
				cfg.NextProtos = []string{"http/1.1"}
				tc := tls.Client(raw, cfg)
				if err := tc.HandshakeContext(ctx); err != nil {
					raw.Close()
					return nil, err
				}
				return tc, nil
			},
		}
	})
	return p.tlsTr
}
