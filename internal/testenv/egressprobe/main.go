// Command egressprobe runs inside a sandbox with an egress policy and
// tries to reach the network, the way a program would and the way an
// attacker (root) would. It prints one line: "ok ..." or "error ...".
//
//	egressprobe get URL            an HTTP(S) GET through HTTP(S)_PROXY (Go's net/http)
//	egressprobe sni TARGET NAME    a CONNECT to TARGET, then TLS with server name NAME
//	egressprobe tcp ADDR           a direct TCP connect, no proxy
//	egressprobe udp ADDR           a DNS query over UDP to ADDR, no proxy
//	egressprobe resolve NAME       the system resolver
//	egressprobe raw ADDR           an ICMP echo on a raw socket (root)
//	egressprobe ifaces -           the network interfaces and their addresses
//	egressprobe getv URL [H V]     a GET through the proxy that verifies TLS with the
//	                               system's roots (SSL_CERT_FILE), with header H: V
//	egressprobe memsearch HEX      searches every other process's memory for the bytes
//	                               HEX encodes (root), and names those it searched
//	egressprobe requests TARGET HOST...
//	                               one connection to the proxy carrying a GET per HOST,
//	                               each with that Host header: to TARGET's absolute URL
//	                               (http://...), or in a tunnel to TARGET (a CONNECT);
//	                               prints each answer's status and body, or "closed"
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Println("error usage")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out string
	var err error
	switch os.Args[1] {
	case "get":
		out, err = get(ctx, os.Args[2])
	case "sni":
		out, err = sni(os.Args[2], os.Args[3])
	case "tcp":
		var c net.Conn
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", os.Args[2])
		if err == nil {
			c.Close()
		}
	case "udp":
		out, err = udpDNS(os.Args[2])
	case "resolve":
		var addrs []string
		addrs, err = net.DefaultResolver.LookupHost(ctx, os.Args[2])
		out = strings.Join(addrs, ",")
	case "raw":
		err = raw(os.Args[2])
	case "ifaces":
		out, err = ifaces()
	case "getv":
		var hdr []string
		if len(os.Args) >= 5 {
			hdr = os.Args[3:5]
		}
		out, err = getVerified(ctx, os.Args[2], hdr)
	case "memsearch":
		out, err = memsearch(os.Args[2])
	case "requests":
		out, err = requests(os.Args[2], os.Args[3:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Println("ok", out)
}

func get(ctx context.Context, url string) (string, error) {
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
}

// sni opens a tunnel to target through the proxy and speaks TLS for name.
func sni(target, name string) (string, error) {
	proxy := strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("CONNECT: %s", resp.Status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: name, InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		return "", fmt.Errorf("TLS: %w", err)
	}
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", name)
	b, _ := io.ReadAll(tc)
	return fmt.Sprintf("%q", b), nil
}

// udpDNS sends a query for example.com's A record and waits for an answer.
func udpDNS(addr string) (string, error) {
	c, err := net.DialTimeout("udp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	q := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1}
	if _, err := c.Write(q); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b := make([]byte, 512)
	n, err := c.Read(b)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d bytes", n), nil
}

// ifaces lists the interfaces, each with its addresses.
func ifaces() (string, error) {
	all, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	var out []string
	for _, i := range all {
		addrs, _ := i.Addrs()
		s := i.Name
		for _, a := range addrs {
			s += " " + a.String()
		}
		out = append(out, s)
	}
	return strings.Join(out, ", "), nil
}

// raw sends an ICMP echo request to addr on a raw socket.
func raw(addr string) error {
	ip := net.ParseIP(addr).To4()
	if ip == nil {
		return fmt.Errorf("not an IPv4 address: %q", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	echo := []byte{8, 0, 0xf7, 0xff, 0, 0, 0, 0}
	sa := &syscall.SockaddrInet4{}
	copy(sa.Addr[:], ip)
	if err := syscall.Sendto(fd, echo, 0, sa); err != nil {
		return fmt.Errorf("sendto: %w", err)
	}
	return nil
}

func getVerified(ctx context.Context, url string, hdr []string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", err
	}
	if hdr != nil {
		req.Header.Set(hdr[0], hdr[1])
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
}

// memsearch reads the memory of every process but this one and reports
// those that hold the bytes hexed encodes.
func memsearch(hexed string) (string, error) {
	needle, err := hex.DecodeString(hexed)
	if err != nil || len(needle) == 0 {
		return "", fmt.Errorf("bad needle")
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return "", err
	}
	var found, searched []string
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		hit, ok := searchProc(pid, needle)
		if ok {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			searched = append(searched, fmt.Sprintf("%d(%s)", pid, strings.TrimSpace(string(comm))))
		}
		if hit {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			found = append(found, fmt.Sprintf("%d(%s)", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	if len(found) > 0 {
		return "", fmt.Errorf("found in %v", found)
	}
	return fmt.Sprintf("searched %d processes: %s", len(searched), strings.Join(searched, " ")), nil
}

// requests sends a GET per host on one connection to the proxy: with
// target's absolute URL, or in a tunnel to target; each with Host: host.
func requests(target string, hosts []string) (string, error) {
	proxy := strings.TrimPrefix(os.Getenv("HTTP_PROXY"), "http://")
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	br := bufio.NewReader(c)
	uri := target
	if !strings.HasPrefix(target, "http://") {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
		if err != nil {
			return "", err
		}
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("CONNECT: %s", resp.Status)
		}
		uri = "/"
	}
	var out []string
	for _, h := range hosts {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", uri, h)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			out = append(out, "closed")
			break
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		out = append(out, fmt.Sprintf("%d:%s", resp.StatusCode, strings.TrimSpace(string(b))))
	}
	return strings.Join(out, " | "), nil
}

// searchProc searches the readable mappings of pid.
func searchProc(pid int, needle []byte) (hit, ok bool) {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, false
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return false, false
	}
	defer mem.Close()
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err != nil || hi <= lo || hi-lo > 1<<30 {
			continue
		}
		buf := make([]byte, hi-lo)
		n, _ := mem.ReadAt(buf, int64(lo))
		if bytes.Contains(buf[:n], needle) {
			return true, true
		}
	}
	return false, true
}
