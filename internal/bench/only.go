package bench

import (
	"context"
	"fmt"
	"strings"
)

// onlyGroups are the groups -only can run by themselves: "ops" (the shared
// channel's operations, for same-run baselines such as read_1k), "ports"
// (dial_rtt, forward_mb_s, published_port_mb_s, forward_ratio), "egress"
// (egress_rtt, direct_rtt, egress_mb_s, direct_mb_s; Docker only),
// "processes" (start_process, poll_output, call_after_idle) and "usage"
// (usage, docker_stats, usage_back_to_back), "lifecycle" (create,
// raw_create on Docker, close, pool_acquire) and "durable" (-durable's
// keys; Docker only).
var onlyGroups = []string{"ops", "ports", "egress", "processes", "usage", "lifecycle", "durable"}

// runOnly runs the comma-separated groups of list, in the order given,
// and returns their keys.
func runOnly(ctx context.Context, b *bench, list string) map[string]any {
	out := map[string]any{}
	for _, g := range strings.Split(list, ",") {
		switch strings.TrimSpace(g) {
		case "ops":
			m, err := b.operations(ctx, true)
			fail(err)
			for k, v := range m {
				out[k] = v
			}
		case "ports":
			b.addPorts(ctx, out)
		case "egress":
			m, err := b.egress(ctx)
			fail(err)
			for k, v := range m {
				out[k] = v
			}
		case "processes":
			m, err := b.processes(ctx)
			fail(err)
			for k, v := range m {
				out[k] = v
			}
		case "usage":
			m, err := b.usage(ctx)
			fail(err)
			for k, v := range m {
				out[k] = v
			}
		case "lifecycle":
			m, err := b.lifecycle(ctx)
			fail(err)
			for k, v := range m {
				out[k] = v
			}
		case "durable":
			if !b.docker() {
				fail(fmt.Errorf("-only durable: snapshots, forks, persist and hydrate need the Docker engine"))
			}
			m, err := b.durable(ctx)
			fail(err)
			for k, v := range m {
				out[k] = v
			}
		default:
			fail(fmt.Errorf("-only: unknown group %q (%s)", g, strings.Join(onlyGroups, ", ")))
		}
	}
	return out
}
