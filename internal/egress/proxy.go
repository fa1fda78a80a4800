package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/iox"
)

// Bounds of a proxied connection.
const (
	// maxHeader bounds a request's line and headers.
	maxHeader = 64 << 10
	// headerWait bounds how long a client takes to send a request's
	// headers.
	headerWait = 30 * time.Second
	// dialWait bounds a connect to a destination.
	dialWait = 30 * time.Second
	// lingerWait bounds how long a finished connection waits for its
	// client to close.
	lingerWait = 5 * time.Second
)

// Event is one decision of the proxy: a tunnel (CONNECT) or a plain HTTP
// request, allowed or denied. An allowed one is reported when it ends,
// with the bytes it carried.
type Event struct {
	Time     time.Time     // when the request came
	Method   string        // "CONNECT", or the HTTP method of a plain request
	Host     string        // the destination's name or address
	Port     int           // and its port
	Allowed  bool          // the policy allowed it
	Rule     string        // the allow-list entry that allowed it
	Reason   string        // why it was denied, or why an allowed one failed ("" when it did not)
	Sent     int64         // bytes sent to the destination
	Received int64         // bytes received from it
	Duration time.Duration // from the request to the end
}

// DialFunc connects to a destination the policy allowed, named as the
// request named it (host:port, the host a name or an address).
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Proxy applies a policy to the connections of one sandbox. Its fields
// are set before the first ServeConn.
type Proxy struct {
	// Policy returns the policy in force; it is asked at every decision,
	// so that a change applies to the next request.
	Policy func() *Policy
	// Dial, if not nil and not returning nil, returns what replaces the
	// connect to an allowed destination (tests map names to their servers
	// with it). The default resolves a name and connects to a public
	// address it has (or one an address rule allows).
	Dial func() DialFunc
	// Log, if not nil, receives every Event; it must not block.
	Log func(Event)
	// CA signs the certificates of the tunnels the proxy terminates to add
	// credentials; without one, such a tunnel fails.
	CA *CA
	// TLSConfig, if not nil and not returning nil, returns the TLS
	// configuration of the proxy's own connections to the destinations
	// it adds credentials for (their roots); the default trusts the
	// host's roots. Its ServerName is set to the destination's.
	TLSConfig func() *tls.Config

	once    sync.Once
	tr      *http.Transport
	tlsOnce sync.Once
	tlsTr   *http.Transport
}

// errDenied: the policy denied the destination.
var errDenied = errors.New("denied by the egress policy")

// ServeConn serves one connection from the sandbox until it ends or ctx
// does: a CONNECT tunnel, or plain HTTP requests (absolute URLs) one
// after another. It closes c.
func (p *Proxy) ServeConn(ctx context.Context, c net.Conn) {
	p.once.Do(p.init)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer finish(c)
	rr := newRequestReader(c, c)
	for {
		req, err := rr.next(headerWait)
		if err != nil {
			if !errors.Is(err, io.EOF) && rr.tooLarge() {
				writeStatus(c, http.StatusRequestHeaderFieldsTooLarge, "the request's headers are too large")
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				writeStatus(c, http.StatusBadRequest, "not an HTTP proxy request")
			}
			return
		}
		if req.Method == http.MethodConnect {
			p.tunnel(ctx, c, rr, req)
			return
		}
		if !p.forward(ctx, c, req, rr.hosts) {
			return
		}
	}
}

// finish ends a client connection: a half-close first, so that what was
// written reaches the client before the end (a stream's Close may drop
// it, as a socket's reset would), then what the client still sends is
// read, briefly, until it closes too.
func finish(c net.Conn) {
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerWait))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, maxHeader))
}

// requestReader reads the requests of a client connection one after
// another: each request's line and headers within maxHeader and a wait,
// its body without either.
type requestReader struct {
	conn  net.Conn // whose read deadline bounds the wait
	lim   *io.LimitedReader
	br    *bufio.Reader
	large bool // the last next failed at maxHeader

	// Of the last request: its line and headers as sent, and the values
	// of its Host headers (http.ReadRequest drops them beside an
	// absolute URL).
	head  []byte
	hosts []string
}

// newRequestReader reads requests from r, on the connection conn (r is
// conn, or a TLS session over it).
func newRequestReader(conn net.Conn, r io.Reader) *requestReader {
	lim := &io.LimitedReader{R: r, N: maxHeader}
	return &requestReader{conn: conn, lim: lim, br: bufio.NewReaderSize(lim, maxHeader)}
}

// errHeadTooLarge: a request's line and headers exceed maxHeader.
var errHeadTooLarge = errors.New("the request's headers are too large")

// next reads the next request's line and headers, waiting at most wait
// (0: for ever).
func (r *requestReader) next(wait time.Duration) (*http.Request, error) {
	r.lim.N = maxHeader
	r.large = false
	if wait > 0 {
		_ = r.conn.SetReadDeadline(time.Now().Add(wait))
	}
	head, err := r.readHead()
	if err != nil {
		return nil, err
	}
	r.head = bytes.Clone(head)
	if r.hosts, err = hostHeaders(r.head); err != nil {
		return nil, err
	}
	req, err := http.ReadRequest(r.br)
	if err != nil {
		return nil, err
	}
	_ = r.conn.SetReadDeadline(time.Time{})
	r.lim.N = math.MaxInt64
	return req, nil
}

// readHead waits until a request's whole line and headers are buffered
// and returns them, not consumed.
func (r *requestReader) readHead() ([]byte, error) {
	for {
		b, _ := r.br.Peek(r.br.Buffered())
		if n := headEnd(b); n > 0 {
			return b[:n], nil
		}
		if len(b) >= r.br.Size() || r.lim.N <= 0 {
			r.large = true
			return nil, errHeadTooLarge
		}
		if _, err := r.br.Peek(len(b) + 1); err != nil {
			if r.lim.N <= 0 {
				r.large = true
				return nil, errHeadTooLarge
			}
			if errors.Is(err, io.EOF) && len(b) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// headEnd returns the length of the request head at the start of b,
// through the empty line that ends it ("\r\n" or, as Go's parser takes
// it, "\n"), or -1 while it is incomplete.
func headEnd(b []byte) int {
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		rest := b[i+1:]
		switch {
		case len(rest) >= 1 && rest[0] == '\n':
			return i + 2
		case len(rest) >= 2 && rest[0] == '\r' && rest[1] == '\n':
			return i + 3
		}
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return -1
		}
		i += 1 + j
	}
	return -1
}

// hostHeaders returns the values of the Host headers of a request head.
func hostHeaders(head []byte) ([]string, error) {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, err
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	return h.Values("Host"), nil
}

// checkHosts denies a request to d that names another host: in its URL
// (an absolute one, or a CONNECT's authority) or in a Host header.
func checkHosts(req *http.Request, hosts []string, d Destination) error {
	if len(hosts) > 1 {
		return fmt.Errorf("%w: %d Host headers in a request to %s", errDenied, len(hosts), d.Host)
	}
	if req.Host != "" {
		hosts = append([]string{req.Host}, hosts...)
	}
	for _, h := range hosts {
		if !sameHost(h, d) {
			return fmt.Errorf("%w: Host %q in a request to %s", errDenied, h, d.Host)
		}
	}
	return nil
}

// tooLarge reports whether the last next failed at maxHeader.
func (r *requestReader) tooLarge() bool { return r.large || r.lim.N <= 0 }

func (p *Proxy) init() {
	p.tr = &http.Transport{
		Proxy:               nil,
		DialContext:         p.dialAllowed,
		ForceAttemptHTTP2:   false,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeStatus answers a request the proxy refuses or cannot serve.
func writeStatus(w io.Writer, code int, why string) {
	body := "dockersandbox egress: " + why + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Dockersandbox-Egress: %s\r\n\r\n%s",
		code, http.StatusText(code), len(body), strings.ReplaceAll(why, "\n", " "), body)
}

// current returns the policy in force.
func (p *Proxy) current() *Policy {
	if p.Policy == nil {
		return nil
	}
	return p.Policy()
}

func (p *Proxy) log(ev Event) {
	ev.Duration = time.Since(ev.Time)
	if p.Log != nil {
		p.Log(ev)
	}
}

// tunnel serves a CONNECT: the destination decided, connected, then the
// bytes carried both ways. What the client sends is looked at: a TLS
// ClientHello must name the tunnel's host (or none: see checkFirstBytes),
// and plain HTTP is read request by request, each of which must have it
// as Host.
func (p *Proxy) tunnel(ctx context.Context, c net.Conn, rr *requestReader, req *http.Request) {
	br := rr.br
	ev := Event{Time: time.Now(), Method: http.MethodConnect}
	d, err := ParseDestination(req.Host, 0)
	if err != nil {
		ev.Host, ev.Reason = req.Host, err.Error()
		writeStatus(c, http.StatusBadRequest, "bad CONNECT target: "+err.Error())
		p.log(ev)
		return
	}
	ev.Host, ev.Port = d.Host, d.Port
	if err := checkHosts(req, rr.hosts, d); err != nil { // a CONNECT's Host header too
		ev.Reason = err.Error()
		writeStatus(c, http.StatusForbidden, ev.Reason)
		p.log(ev)
		return
	}
	pol := p.current() // one policy for the whole decision
	rule, ok := pol.Allows(d)
	if !ok {
		ev.Reason = errDenied.Error()
		writeStatus(c, http.StatusForbidden, d.String()+" is "+errDenied.Error())
		p.log(ev)
		return
	}
	ev.Allowed, ev.Rule = true, rule
	if len(pol.credentialsFor(d)) > 0 {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			ev.Reason = err.Error()
			p.log(ev)
			return
		}
		ev.Sent, ev.Received, err = p.intercept(ctx, c, br, d) // credential.go
		if err != nil {
			ev.Reason = err.Error()
			ev.Allowed = !errors.Is(err, errDenied)
		}
		p.log(ev)
		return
	}
	dctx, cancel := context.WithTimeout(ctx, dialWait)
	up, err := p.dialAllowed(dctx, "tcp", d.String())
	cancel()
	if err != nil {
		ev.Reason = err.Error()
		code := http.StatusBadGateway
		if errors.Is(err, errDenied) {
			ev.Allowed, code = false, http.StatusForbidden
		}
		writeStatus(c, code, "connect "+d.String()+": "+err.Error())
		p.log(ev)
		return
	}
	defer up.Close()
	defer context.AfterFunc(ctx, func() { up.Close() })()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ev.Reason = err.Error()
		p.log(ev)
		return
	}
	var sent, received atomic.Int64
	done := make(chan error, 1)
	go func() { // destination → client
		n, err := io.Copy(c, up)
		received.Add(n)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- err
	}()
	// client → destination, checked.
	upErr := func() error {
		w := &iox.CountWriter{W: up}
		defer func() { sent.Add(w.N) }()
		var err error
		if first, perr := br.Peek(1); perr == nil && looksHTTP(first[0]) {
			err = copyRequests(w, rr, d)
		} else if err = checkFirstBytes(br, d); err == nil {
			_, err = io.Copy(w, br)
		}
		if err != nil {
			return err
		}
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		return nil
	}()
	if upErr != nil {
		up.Close()
		c.Close()
		<-done
		if errors.Is(upErr, errDenied) {
			ev.Allowed, ev.Reason = false, upErr.Error()
		}
	} else {
		<-done
	}
	ev.Sent, ev.Received = sent.Load(), received.Load()
	p.log(ev)
}

// checkFirstBytes looks at what a tunnel's client sends first, when it is
// not HTTP (copyRequests reads that): a TLS ClientHello whose server name
// is not the tunnel's host is denied; one that names none passes (its
// bytes still go to the tunnel's host's addresses only, whose server
// answers as for no name: the egress cannot see the Host inside, as with
// every TLS tunnel); other protocols pass. It waits for the client's first
// byte however long that takes (a protocol where the server speaks first
// sends nothing before it).
func checkFirstBytes(br *bufio.Reader, d Destination) error {
	first, err := br.Peek(1)
	if err != nil {
		return nil // the client sent nothing: io.Copy sees the end
	}
	switch {
	case first[0] == 0x16: // a TLS handshake record
		hdr, err := br.Peek(5)
		if err != nil {
			return fmt.Errorf("%w: a truncated TLS record", errDenied)
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n > 1<<14+2048 {
			return fmt.Errorf("%w: a TLS record of %d bytes", errDenied, n)
		}
		rec, err := br.Peek(5 + n)
		if err != nil {
			return fmt.Errorf("%w: a truncated TLS record", errDenied)
		}
		name, ok := serverName(rec)
		if !ok {
			return fmt.Errorf("%w: the TLS ClientHello could not be read", errDenied)
		}
		if name != "" && !sameHost(name, d) {
			return fmt.Errorf("%w: TLS for %q in a tunnel to %s", errDenied, name, d.Host)
		}
	}
	return nil
}

// copyRequests carries the plain HTTP requests of a tunnel to d to up, one
// after another, each checked (checkHosts): the first that names another
// host, or that is not HTTP, ends the tunnel. Each request's line and
// headers go as the client sent them; its body as its framing says. After
// a request that upgrades the connection (a WebSocket), what follows is
// no longer HTTP: it is carried as it is, to d still.
func copyRequests(up io.Writer, rr *requestReader, d Destination) error {
	for {
		req, err := rr.next(0) // a client may wait between requests
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("%w: not an HTTP request in an HTTP tunnel to %s: %v", errDenied, d.Host, err)
		}
		if err := checkHosts(req, rr.hosts, d); err != nil {
			req.Body.Close()
			return err
		}
		if _, err := up.Write(rr.head); err != nil {
			req.Body.Close()
			return err
		}
		if len(req.TransferEncoding) > 0 { // chunked: chunked again
			cw := httputil.NewChunkedWriter(up)
			_, err = io.Copy(cw, req.Body)
			if err == nil {
				err = cw.Close()
			}
			if err == nil {
				_, err = io.WriteString(up, "\r\n")
			}
		} else {
			_, err = io.Copy(up, req.Body)
		}
		req.Body.Close()
		if err != nil {
			return err
		}
		if req.Header.Get("Upgrade") != "" {
			_, err := io.Copy(up, rr.br)
			return err
		}
	}
}

// sameHost reports whether name (a TLS server name or a Host header,
// perhaps with a port) names the destination's host.
func sameHost(name string, d Destination) bool {
	host := name
	if h, _, err := net.SplitHostPort(name); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return d.IsIP() && a.Unmap() == d.Addr
	}
	c, ok := canonicalName(host)
	return ok && c == d.Host
}

// looksHTTP reports whether b can start an HTTP request line.
func looksHTTP(b byte) bool { return 'A' <= b && b <= 'Z' }

// serverName reads the server name of the TLS ClientHello in rec (one
// record): "" when it names none; false when rec is not one.
func serverName(rec []byte) (string, bool) {
	var name string
	var got bool
	errGot := errors.New("got the ClientHello")
	conn := &recordConn{r: bytes.NewReader(rec)}
	_ = tls.Server(conn, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, got = h.ServerName, true
		return nil, errGot
	}}).Handshake()
	return name, got
}

// recordConn is a net.Conn that reads a recorded ClientHello and writes
// nowhere.
type recordConn struct {
	net.Conn
	r io.Reader
}

func (c *recordConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *recordConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *recordConn) Close() error                     { return nil }
func (c *recordConn) SetDeadline(time.Time) error      { return nil }
func (c *recordConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *recordConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// hopHeaders are a proxy's own headers, not forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// forward serves one plain HTTP request with an absolute URL, whose Host
// headers (hosts) must name its host if any do; it reports whether the
// connection can serve another.
func (p *Proxy) forward(ctx context.Context, c net.Conn, req *http.Request, hosts []string) bool {
	ev := Event{Time: time.Now(), Method: req.Method}
	defer req.Body.Close()
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		ev.Host, ev.Reason = req.Host, "not a proxy request (an absolute http:// URL)"
		writeStatus(c, http.StatusBadRequest, ev.Reason)
		p.log(ev)
		return false
	}
	d, err := ParseDestination(req.URL.Host, 80)
	if err != nil {
		ev.Host, ev.Reason = req.URL.Host, err.Error()
		writeStatus(c, http.StatusBadRequest, err.Error())
		p.log(ev)
		return false
	}
	ev.Host, ev.Port = d.Host, d.Port
	// A Host header beside an absolute URL that names another host is
	// refused, not dropped (the destination would get the URL's, RFC 9112
	// 3.2.2): the client asks for two hosts at once.
	if err := checkHosts(req, hosts, d); err != nil {
		ev.Reason = err.Error()
		writeStatus(c, http.StatusForbidden, ev.Reason)
		p.log(ev)
		return false
	}
	pol := p.current()
	rule, ok := pol.Allows(d)
	if !ok {
		ev.Reason = errDenied.Error()
		writeStatus(c, http.StatusForbidden, d.String()+" is "+errDenied.Error())
		p.log(ev)
		return false
	}
	if len(pol.credentialsFor(d)) > 0 {
		// A credential crosses the network over TLS only: the request
		// would go without it, and fail in a way the sandbox cannot tell.
		ev.Reason = errPlainCredential.Error()
		writeStatus(c, http.StatusForbidden, d.String()+": "+ev.Reason)
		p.log(ev)
		return false
	}
	ev.Allowed, ev.Rule = true, rule
	r, err := relay(ctx, c, p.tr, req, nil, nil)
	ev.Sent, ev.Received = r.sent, r.received
	if err != nil {
		ev.Reason = err.Error()
		code := http.StatusBadGateway
		if errors.Is(err, errDenied) {
			ev.Allowed, code = false, http.StatusForbidden
		}
		writeStatus(c, code, "request to "+d.String()+": "+err.Error())
		p.log(ev)
		return false
	}
	if r.werr != nil {
		ev.Reason = r.werr.Error()
	}
	p.log(ev)
	return r.again
}

// relayed is what relay did.
type relayed struct {
	sent, received int64 // the bodies' bytes, each way
	again          bool  // the client's connection can carry another request
	werr           error // writing the response to the client failed
}

// relay sends req on with tr, as a proxy does (the request URI and the
// hop-by-hop headers dropped, then prep, if not nil, applied to the
// outgoing request), and writes the response to w (its hop-by-hop headers
// dropped, then fix, if not nil, applied to its headers). An error is the
// round trip's: nothing was written to w.
func relay(ctx context.Context, w io.Writer, tr http.RoundTripper, req *http.Request, prep func(*http.Request), fix func(http.Header)) (relayed, error) {
	defer req.Body.Close()
	out := req.Clone(ctx)
	out.RequestURI, out.Host = "", ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if prep != nil {
		prep(out)
	}
	body := &iox.CountReader{R: req.Body}
	if req.Body != http.NoBody {
		out.Body = io.NopCloser(body)
	}
	resp, err := tr.RoundTrip(out)
	r := relayed{sent: body.N}
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	if fix != nil {
		fix(resp.Header)
	}
	rb := &iox.CountReader{R: resp.Body}
	resp.Body = io.NopCloser(rb)
	r.werr = resp.Write(w)
	r.received = rb.N
	r.again = r.werr == nil && !req.Close && !resp.Close
	return r, nil
}

// dialAllowed connects to address (host:port, decided already): with
// Dial when set; else a name is resolved, and only its public addresses,
// or those an address rule allows, are tried.
func (p *Proxy) dialAllowed(ctx context.Context, network, address string) (net.Conn, error) {
	d, err := ParseDestination(address, 0)
	if err != nil {
		return nil, err
	}
	pol := p.current()
	if _, ok := pol.Allows(d); !ok { // the policy may have changed
		return nil, fmt.Errorf("%s: %w", d, errDenied)
	}
	if p.Dial != nil {
		if dial := p.Dial(); dial != nil {
			return dial(ctx, network, address)
		}
	}
	var addrs []netip.Addr
	if d.IsIP() {
		addrs = []netip.Addr{d.Addr}
	} else {
		all, err := net.DefaultResolver.LookupNetIP(ctx, "ip", d.Host)
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			if publicAddr(a) || pol.AllowsAddr(a, d.Port) {
				addrs = append(addrs, a.Unmap())
			}
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%w: %s resolves to no public address (%v); an address rule allows others", errDenied, d.Host, all)
		}
	}
	var dl net.Dialer
	var errs []error
	for _, a := range addrs {
		c, err := dl.DialContext(ctx, network, net.JoinHostPort(a.String(), strconv.Itoa(d.Port)))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
