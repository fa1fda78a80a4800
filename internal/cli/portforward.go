package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// portForward forwards a host port to a port in a sandbox until
// interrupted: "sandbox port-forward ID [HOSTADDR:]HOSTPORT:PORT".
func portForward(ctx context.Context, args []string) error {
	fs := newFlags("port-forward", "[-json] ID [HOSTADDR:]HOSTPORT:PORT  (HOSTADDR default 127.0.0.1; HOSTPORT 0 picks one)")
	asJSON := fs.Bool("json", false, `print {"id", "host_addr", "port"} as JSON once listening`)
	choice := engineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: port-forward needs ID and [HOSTADDR:]HOSTPORT:PORT", errUsage)
	}
	id := fs.Arg(0)
	hostAddr, port, err := parseForwardSpec(fs.Arg(1))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	sb, err := attach(ctx, eng, id, sandbox.WithAutoRemove(false))
	if err != nil {
		return err
	}
	defer sb.Detach()
	fw, err := sb.Forward(ctx, hostAddr, port)
	if err != nil {
		return err
	}
	defer fw.Close()
	if *asJSON {
		if err := printJSON(os.Stdout, forwardInfo{ID: id, HostAddr: fw.Addr().String(), Port: port}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(os.Stderr, "forwarding %s to port %d in sandbox %s; Ctrl-C to stop\n", fw.Addr(), port, id)
	}
	select {
	case <-ctx.Done(): // interrupted: a normal end
		return nil
	case <-fw.Done():
		return fmt.Errorf("the forward ended: its listener failed")
	}
}

// forwardInfo is what port-forward -json prints.
type forwardInfo struct {
	ID       string `json:"id"`
	HostAddr string `json:"host_addr"`
	Port     int    `json:"port"`
}

// parseForwardSpec splits "[HOSTADDR:]HOSTPORT:PORT" (HOSTADDR may be an
// IPv6 address in brackets) into Forward's host address and port.
func parseForwardSpec(spec string) (string, int, error) {
	i := strings.LastIndexByte(spec, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q: want [HOSTADDR:]HOSTPORT:PORT", spec)
	}
	port, err := strconv.Atoi(spec[i+1:])
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q: PORT must be 1-65535", spec)
	}
	host, hostPort := "127.0.0.1", spec[:i]
	if j := strings.LastIndexByte(hostPort, ':'); j >= 0 {
		host, hostPort = strings.Trim(hostPort[:j], "[]"), hostPort[j+1:]
		if host == "" {
			host = "127.0.0.1"
		}
	}
	if n, err := strconv.Atoi(hostPort); err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("%q: HOSTPORT must be 0-65535", spec)
	}
	return net.JoinHostPort(host, hostPort), port, nil
}
