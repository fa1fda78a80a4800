package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/client"
)

// Egress measurements (Docker only), in the same run against one server:
// a sandbox on the bridge serving files with busybox httpd (the
// "internet": a container this run made). "egress_rtt" is the median ms of
// a small HTTP GET (busybox wget, a process each) from a sandbox with an
// egress policy that allows the server's address, through its proxy;
// "direct_rtt" the same GET from a sandbox on the bridge; "egress_mb_s"
// and "direct_mb_s" the MB/s of a 64 MiB download each way (medians of
// three).
const (
	egressBytes  = 64 << 20
	egressRounds = 3
	egressGets   = 10 // small GETs per iteration
)

func (b *bench) egress(ctx context.Context) (map[string]any, error) {
	if !b.docker() {
		return nil, fmt.Errorf("the egress comparison needs the Docker engine")
	}
	server, err := sandbox.New(ctx, append(append([]sandbox.Option{}, b.opts...), sandbox.WithNetworkMode("bridge"))...)
	if err != nil {
		return nil, err
	}
	defer server.Close()
	if _, err := server.Execute(ctx, fmt.Sprintf("mkdir -p /tmp/srv && head -c %d /dev/zero > /tmp/srv/big && echo hi > /tmp/srv/small", egressBytes)); err != nil {
		return nil, err
	}
	if _, err := server.StartProcess(ctx, "httpd -f -p 8080 -h /tmp/srv"); err != nil {
		return nil, err
	}
	info, err := b.cli.ContainerInspect(ctx, server.ID(), client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	ip := ""
	if ns := info.Container.NetworkSettings; ns != nil {
		for _, n := range ns.Networks {
			if n != nil && n.IPAddress.IsValid() {
				ip = n.IPAddress.String()
			}
		}
	}
	if ip == "" {
		return nil, fmt.Errorf("the server sandbox has no address on the bridge")
	}
	addr := ip + ":8080"
	direct, err := sandbox.New(ctx, append(append([]sandbox.Option{}, b.opts...), sandbox.WithNetworkMode("bridge"))...)
	if err != nil {
		return nil, err
	}
	defer direct.Close()
	viaEgress, err := sandbox.New(ctx, append(append([]sandbox.Option{}, b.opts...),
		sandbox.WithEgress(sandbox.EgressPolicy{Allow: []string{addr}}))...)
	if err != nil {
		return nil, err
	}
	defer viaEgress.Close()
	// No NO_PROXY for the server's address; the direct one has no proxy.
	getSmall := strings.Repeat("wget -q -O /dev/null http://"+addr+"/small && ", egressGets) + "true"
	getBig := "wget -q -O /dev/null http://" + addr + "/big"
	out := map[string]any{}
	for _, c := range []struct {
		name string
		sb   *sandbox.Sandbox
	}{{"direct", direct}, {"egress", viaEgress}} {
		var rtts, rates []float64
		for range b.n {
			start := time.Now()
			if err := mustRun(ctx, c.sb, getSmall); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			rtts = append(rtts, float64(time.Since(start).Microseconds())/1000/egressGets)
		}
		for range egressRounds {
			start := time.Now()
			if err := mustRun(ctx, c.sb, getBig); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			rates = append(rates, egressBytes/1e6/time.Since(start).Seconds())
		}
		out[c.name+"_rtt"] = round2(median(rtts))
		out[c.name+"_mb_s"] = round2(median(rates))
	}
	return out, nil
}

// mustRun runs command and fails unless it exits 0.
func mustRun(ctx context.Context, sb *sandbox.Sandbox, command string) error {
	res, err := sb.Execute(ctx, command)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%q: exit %d: %s", command, res.ExitCode, res.Output)
	}
	return nil
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }
