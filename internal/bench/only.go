package bench

import (
	"context"
	"fmt"
	"slices"
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

// parseOnly returns the groups of -only's list, or an error naming one
// that is not a group.
func parseOnly(list string) ([]string, error) {
	groups := strings.Split(list, ",")
	for i, g := range groups {
		groups[i] = strings.TrimSpace(g)
		if !slices.Contains(onlyGroups, groups[i]) {
			return nil, fmt.Errorf("-only: unknown group %q (%s)", g, strings.Join(onlyGroups, ", "))
		}
	}
	return groups, nil
}

// runOnly runs groups (parseOnly's), in the order given, and returns
// their keys.
func runOnly(ctx context.Context, b *bench, groups []string) map[string]any {
	run := map[string]func(context.Context) (map[string]any, error){
		"ops":       keys(func(ctx context.Context) (map[string]float64, error) { return b.operations(ctx, true) }),
		"egress":    b.egress,
		"processes": keys(b.processes),
		"usage":     keys(b.usage),
		"lifecycle": keys(b.lifecycle),
		"durable":   keys(b.durable),
	}
	out := map[string]any{}
	for _, g := range groups {
		switch {
		case g == "ports":
			b.addPorts(ctx, out)
			continue
		case g == "durable" && !b.docker():
			fail(fmt.Errorf("-only durable: snapshots, forks, persist and hydrate need the Docker engine"))
		case run[g] == nil:
			fail(fmt.Errorf("-only: group %q has no function", g))
		}
		m, err := run[g](ctx)
		fail(err)
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// keys makes a group's function of typed keys one of any keys.
func keys[V any](f func(context.Context) (map[string]V, error)) func(context.Context) (map[string]any, error) {
	return func(ctx context.Context) (map[string]any, error) {
		m, err := f(ctx)
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out, err
	}
}
