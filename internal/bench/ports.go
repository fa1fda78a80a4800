package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Port measurements, in the same run on one sandbox: "dial_rtt" (median ms
// of a 64-byte round trip over an established Dial connection to an echo
// server in the sandbox), "forward_mb_s" (MB/s of 256 MiB read from a
// server in the sandbox through Forward, from a host TCP connection to
// 127.0.0.1), "published_port_mb_s" (the same transfer through a port the
// engine publishes on 127.0.0.1), "forward_ratio" (the first over the
// second) and "exec_stream_mb_s" (the same bytes read by `cat` on a plain
// engine exec, with the SDK: what the engine's exec stream, which Forward
// rides, carries at most). The server sends a file (cat, or Python's
// sendfile), not a generator: busybox head writes in small pieces and was
// the limit of the published port. Throughputs are medians of three
// transfers. On an engine other than Docker there is no published port:
// published_port_mb_s and forward_ratio are left out (not faked), and
// exec_stream_mb_s is the engine's own Exec (on Kubernetes, through the
// API server).
const (
	portsEcho     = 9001
	portsSource   = 9000
	portsBytes    = 256 << 20
	portsRounds   = 3
	portsRTTCount = 10 // round trips per iteration
	portsFile     = "/tmp/bench-ports-source"
)

// execStream reads portsFile with cat on an engine exec of its own and
// returns the rate in MB/s.
func (b *bench) execStream(ctx context.Context, id string) (float64, error) {
	if !b.docker() {
		start := time.Now()
		var n countWriter
		if err := engineExec(ctx, b.eng, id, &n, "cat", portsFile); err != nil {
			return 0, err
		}
		return portsRate(int64(n), time.Since(start))
	}
	return dockerExecStream(ctx, b.cli, id)
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// dockerExecStream is execStream with an SDK exec.
func dockerExecStream(ctx context.Context, cli *client.Client, id string) (float64, error) {
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: []string{"cat", portsFile}})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, err
	}
	defer att.Close()
	n, err := stdcopy.StdCopy(io.Discard, io.Discard, att.Reader)
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	return portsRate(n, took)
}

// addPorts adds the port measurements to out.
func (b *bench) addPorts(ctx context.Context, out map[string]any) {
	m, err := b.ports(ctx)
	fail(err)
	for k, v := range m {
		out[k] = v
	}
}

func (b *bench) ports(ctx context.Context) (map[string]any, error) {
	src := network.MustParsePort(fmt.Sprintf("%d/tcp", portsSource))
	opts := b.opts
	if b.docker() {
		opts = append(append([]sandbox.Option{}, b.opts...), sandbox.WithNetworkMode("bridge"),
			sandbox.WithContainerConfig(func(c *container.Config, hc *container.HostConfig) {
				c.ExposedPorts = network.PortSet{src: {}}
				hc.PortBindings = network.PortMap{src: {{HostIP: netip.MustParseAddr("127.0.0.1")}}}
			}))
	}
	sb, err := sandbox.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	// Servers on every address (the published port arrives on the
	// container's own), with busybox nc or else python3.
	echo := fmt.Sprintf("nc -ll -p %d -e cat", portsEcho)
	if _, err := sb.Execute(ctx, fmt.Sprintf("head -c %d /dev/zero > %s", portsBytes, portsFile)); err != nil {
		return nil, err
	}
	source := fmt.Sprintf("nc -ll -p %d -e cat %s", portsSource, portsFile)
	if res, err := sb.Execute(ctx, "command -v nc"); err != nil || res.ExitCode != 0 {
		echo = fmt.Sprintf(`python3 -c 'import socketserver as s
class H(s.StreamRequestHandler):
  def handle(self):
    while b := self.request.recv(65536): self.request.sendall(b)
s.ThreadingTCPServer(("", %d), H).serve_forever()'`, portsEcho)
		source = fmt.Sprintf(`python3 -c 'import socketserver as s
class H(s.StreamRequestHandler):
  def handle(self):
    with open("%s", "rb") as f: self.request.sendfile(f)
s.ThreadingTCPServer(("", %d), H).serve_forever()'`, portsFile, portsSource)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	for _, cmd := range []string{echo, source} {
		if err := sb.Command(sctx, cmd).Start(); err != nil {
			return nil, err
		}
	}
	conn, err := dialRetry(ctx, sb, fmt.Sprintf("127.0.0.1:%d", portsEcho))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := dialRetry(ctx, sb, fmt.Sprintf("127.0.0.1:%d", portsSource)); err != nil {
		return nil, err
	}
	s := samples{}
	msg, buf := make([]byte, 64), make([]byte, 64)
	for range b.n * portsRTTCount {
		if err := s.time("dial_rtt", func() error {
			if _, err := conn.Write(msg); err != nil {
				return err
			}
			_, err := io.ReadFull(conn, buf)
			return err
		}); err != nil {
			return nil, err
		}
	}
	fw, err := sb.Forward(ctx, "127.0.0.1:0", portsSource)
	if err != nil {
		return nil, err
	}
	defer fw.Close()
	published := "" // none on another engine
	if b.docker() {
		if published, err = publishedAddr(ctx, b.cli, sb.ID(), src); err != nil {
			return nil, err
		}
	}
	var fwd, pub, raw []float64
	for range portsRounds { // alternated, so that all see the same load
		mbs, err := b.execStream(ctx, sb.ID())
		if err != nil {
			return nil, fmt.Errorf("exec stream: %w", err)
		}
		raw = append(raw, mbs)
		mbs, err = transfer(fw.Addr().String())
		if err != nil {
			return nil, fmt.Errorf("forward: %w", err)
		}
		fwd = append(fwd, mbs)
		if published == "" {
			continue
		}
		if mbs, err = transfer(published); err != nil {
			return nil, fmt.Errorf("published port: %w", err)
		}
		pub = append(pub, mbs)
	}
	out := map[string]any{}
	for k, v := range s.medians() {
		out[k] = v
	}
	f := median(fwd)
	out["forward_mb_s"] = f
	if len(pub) > 0 {
		p := median(pub)
		out["published_port_mb_s"] = p
		out["forward_ratio"] = math.Round(f/p*100) / 100
	}
	out["exec_stream_mb_s"] = median(raw)
	return out, nil
}

// dialRetry dials address in sb until its server listens (10 s).
func dialRetry(ctx context.Context, sb *sandbox.Sandbox, address string) (net.Conn, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := sb.Dial(ctx, "tcp", address)
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// publishedAddr is the host address the engine published port on.
func publishedAddr(ctx context.Context, cli *client.Client, id string, port network.Port) (string, error) {
	info, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return "", err
	}
	if info.Container.NetworkSettings != nil {
		for _, b := range info.Container.NetworkSettings.Ports[port] {
			if b.HostIP.Is4() && b.HostPort != "" {
				return net.JoinHostPort(b.HostIP.String(), b.HostPort), nil
			}
		}
	}
	return "", fmt.Errorf("port %v is not published", port)
}

// transfer reads everything from a TCP connection to addr and returns the
// rate in MB/s (10^6 bytes); it must be portsBytes.
func transfer(addr string) (float64, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	start := time.Now()
	n, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	return portsRate(n, took)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// portsRate is the MB/s (one decimal) of a transfer of n bytes in took,
// which must have moved portsBytes.
func portsRate(n int64, took time.Duration) (float64, error) {
	if n != portsBytes {
		return 0, fmt.Errorf("read %d bytes, want %d", n, portsBytes)
	}
	return math.Round(float64(n)/took.Seconds()/1e6*10) / 10, nil
}
