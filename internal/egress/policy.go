// Package egress is the host side of a sandbox's egress policy: the
// allow-list and the HTTP proxy that applies it. The sandbox has no
// network of its own (network "none"); its helper listens on a loopback
// port inside it and carries each connection over the helper's channel to
// the host library, where Proxy reads the request, decides, and connects.
// Everything the container sends is hostile: the decision, the name
// resolution and the connect happen here, never in the container.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalidRule: an entry of an allow-list cannot be parsed.
var ErrInvalidRule = errors.New("invalid egress rule")

// rule is one entry of an allow-list.
type rule struct {
	host   string       // an exact name, lower-case, without a final dot
	suffix string       // "*.example.com": ".example.com"
	prefix netip.Prefix // an address or a range
	port   int          // 0: every port
	text   string       // as given
}

// Policy is a parsed allow-list: what it does not allow is denied. The
// zero Policy (and a nil one) allows nothing.
type Policy struct {
	rules []rule
	creds []credRule
}

// Parse parses an allow-list. Each entry is a host name ("pypi.org"), a
// suffix ("*.pythonhosted.org": every name under it, not the name
// itself), an IP address ("192.0.2.7", "2001:db8::1") or range
// ("10.0.0.0/8"), each optionally followed by ":port" (IPv6 in brackets:
// "[2001:db8::1]:443"); without a port every port is allowed.
//
// creds are the credentials added at the egress (see Credential); a
// credential's destination must be allowed too.
func Parse(allow []string, creds []Credential) (*Policy, error) {
	p := &Policy{}
	for _, e := range allow {
		r, err := parseRule(e)
		if err != nil {
			return nil, err
		}
		p.rules = append(p.rules, r)
	}
	for _, c := range creds {
		r, err := parseCredential(c)
		if err != nil {
			return nil, err
		}
		p.creds = append(p.creds, r)
	}
	return p, nil
}

func parseRule(e string) (rule, error) {
	bad := func(why string) (rule, error) {
		return rule{}, fmt.Errorf("%w %q: %s", ErrInvalidRule, e, why)
	}
	r := rule{text: e}
	s := strings.TrimSpace(e)
	if s == "" {
		return bad("empty")
	}
	// A port: "host:port", "[v6]:port", "cidr:port" (not a bare IPv6).
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("the port must be 1 to 65535")
		}
		s, r.port = h, n
	} else if i := strings.LastIndexByte(s, ':'); i > 0 && strings.Count(s, ":") == 1 {
		return bad("the port must be 1 to 65535")
	}
	if pf, err := netip.ParsePrefix(s); err == nil {
		r.prefix = pf.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		r.prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return r, nil
	}
	name := s
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		name = rest
	}
	name, ok := canonicalName(name)
	if !ok {
		return bad("not a host name, an IP address or a range")
	}
	if strings.HasPrefix(s, "*.") {
		r.suffix = "." + name
	} else {
		r.host = name
	}
	return r, nil
}

// canonicalName returns a host name lower-case without its final dot, or
// false when it is not one: ASCII letters, digits, hyphens and dots only
// (an internationalised name is given in its xn-- form), labels of 1 to 63
// bytes, 253 bytes at most.
func canonicalName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return s, true
}

// Destination is where a request goes: a host name or an IP address, and
// a port.
type Destination struct {
	Host string // a canonical name, or an IP address in its usual form
	Addr netip.Addr
	Port int
}

// IsIP reports whether the destination was given as an address.
func (d Destination) IsIP() bool { return d.Addr.IsValid() }

// String is host:port.
func (d Destination) String() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// ParseDestination parses host:port as a request names it. A name is
// made canonical; one that is not a host name is an error.
func ParseDestination(hostport string, defaultPort int) (Destination, error) {
	host, port := hostport, defaultPort
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Destination{}, fmt.Errorf("bad port in %q", hostport)
		}
		host, port = h, n
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		host = hostport[1 : len(hostport)-1]
	}
	if port < 1 || port > 65535 {
		return Destination{}, fmt.Errorf("no port in %q", hostport)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Destination{}, fmt.Errorf("an address with a zone: %q", hostport)
		}
		a = a.Unmap()
		return Destination{Host: a.String(), Addr: a, Port: port}, nil
	}
	name, ok := canonicalName(host)
	if !ok {
		return Destination{}, fmt.Errorf("not a host name: %q", host)
	}
	return Destination{Host: name, Port: port}, nil
}

// Allows reports whether the policy allows d, and the rule that does.
// A name matches name rules only, an address address rules only: allowing
// "example.com" does not allow its addresses given directly.
func (p *Policy) Allows(d Destination) (string, bool) {
	if p == nil {
		return "", false
	}
	for _, r := range p.rules {
		if r.port != 0 && r.port != d.Port {
			continue
		}
		switch {
		case d.IsIP() && r.prefix.IsValid():
			if r.prefix.Contains(d.Addr) {
				return r.text, true
			}
		case !d.IsIP() && r.host != "":
			if d.Host == r.host {
				return r.text, true
			}
		case !d.IsIP() && r.suffix != "":
			if strings.HasSuffix(d.Host, r.suffix) {
				return r.text, true
			}
		}
	}
	return "", false
}

// AllowsAddr reports whether an address rule of the policy allows a, at
// port. Addresses a name resolves to are checked with it when they are
// not public (see publicAddr): a name may not lead to the host's loopback
// or its private networks unless an address rule says so.
func (p *Policy) AllowsAddr(a netip.Addr, port int) bool {
	if p == nil {
		return false
	}
	a = a.Unmap()
	for _, r := range p.rules {
		if r.prefix.IsValid() && (r.port == 0 || r.port == port) && r.prefix.Contains(a) {
			return true
		}
	}
	return false
}

// publicAddr reports whether a is a global unicast address outside the
// private ranges: the only kind a name may resolve to without an address
// rule that allows it.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsGlobalUnicast() && !a.IsPrivate() && !cgnat.Contains(a)
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")
