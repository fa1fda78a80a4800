package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

var _ engine.Meter = (*Engine)(nil)

// maxStats bounds the stats answer read (one sample is a few KiB; a
// host with many CPUs lists each).
const maxStats = 4 << 20

// Usage measures the container: one sample of the stats API (one-shot: no
// wait for a second sample) and an inspect with the writable layer's size,
// asked together. Docker (20.10 at least) answers the sample at its stats
// collector's next tick: at once when the collector was idle for a second,
// else within a second. The size is the daemon's walk of the layer: its
// cost grows with the files written there.
func (d *Engine) Usage(ctx context.Context, id string) (engine.Usage, error) {
	type inspected struct {
		res client.ContainerInspectResult
		err error
	}
	insp := make(chan inspected, 1)
	go func() {
		res, err := d.Client.ContainerInspect(ctx, id, client.ContainerInspectOptions{Size: true})
		insp <- inspected{res, err}
	}()
	st, serr := d.stats(ctx, id)
	in := <-insp // even when stats failed: it tells a stopped container
	if in.err != nil {
		return engine.Usage{}, Classify(in.err)
	}
	c := in.res.Container
	if err := notRunning(id, c.State); err != nil {
		return engine.Usage{}, err
	}
	if serr != nil {
		// The daemon ends the stats of a container that stops with an
		// empty answer: asked again, the container says why.
		if ctx.Err() == nil && !errors.Is(serr, engine.ErrNotFound) && !errors.Is(serr, engine.ErrUnreachable) {
			res, err := d.Client.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if err != nil {
				return engine.Usage{}, Classify(err)
			}
			if err := notRunning(id, res.Container.State); err != nil {
				return engine.Usage{}, err
			}
		}
		return engine.Usage{}, serr
	}
	u := usageOf(st)
	if d.swapsNetwork(ctx) {
		u.NetworkRx, u.NetworkTx = u.NetworkTx, u.NetworkRx
	}
	if t, err := time.Parse(time.RFC3339Nano, c.State.StartedAt); err == nil {
		u.Started = t
	}
	if c.SizeRw != nil {
		u.Disk = *c.SizeRw
	}
	if u.Read.IsZero() {
		u.Read = time.Now()
	}
	return u, nil
}

// swapsNetwork reports whether the daemon is a Podman before 4.4, whose
// stats give the bytes sent as received and the other way round (Podman
// issue 16618), asking its version once.
func (d *Engine) swapsNetwork(ctx context.Context) bool {
	if !d.Podman {
		return false
	}
	switch d.netSwap.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	v, err := d.Client.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return false // asked again next time
	}
	version, _ := podmanComponent(v)
	swapped := podmanBefore44(version)
	known := int32(1)
	if swapped {
		known = 2
	}
	d.netSwap.Store(known)
	return swapped
}

// podmanBefore44 reports whether version ("4.3.1") is a Podman before 4.4.
func podmanBefore44(version string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major < 4 || major == 4 && minor < 4
}

// notRunning is engine.ErrNotRunning for a container neither running nor
// paused, else nil.
func notRunning(id string, s *container.State) error {
	if s != nil && (s.Running || s.Paused) {
		return nil
	}
	state := "unknown"
	if s != nil {
		state = string(s.Status)
	}
	return fmt.Errorf("docker: container %s is %s: %w", shortID(id), state, engine.ErrNotRunning)
}

// stats reads one sample of the container's stats.
func (d *Engine) stats(ctx context.Context, id string) (container.StatsResponse, error) {
	var st container.StatsResponse
	res, err := d.Client.ContainerStats(ctx, id, client.ContainerStatsOptions{})
	if err != nil {
		return st, Classify(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(io.LimitReader(res.Body, maxStats)).Decode(&st); err != nil {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		return st, fmt.Errorf("docker: stats of %s: %w", shortID(id), Classify(err))
	}
	return st, nil
}

// usageOf reads a stats sample: the memory less the inactive page cache
// (cgroup v1's total_inactive_file, v2's inactive_file), as docker stats
// shows it; the bytes of every network interface. Disk is -1 (unknown).
func usageOf(st container.StatsResponse) engine.Usage {
	m := st.MemoryStats
	inactive, ok := m.Stats["total_inactive_file"] // cgroup v1
	if !ok {
		inactive = m.Stats["inactive_file"] // cgroup v2
	}
	u := engine.Usage{
		Read:        st.Read,
		CPU:         time.Duration(st.CPUStats.CPUUsage.TotalUsage),
		Memory:      m.Usage - min(inactive, m.Usage),
		MemoryPeak:  m.MaxUsage,
		MemoryLimit: m.Limit,
		Processes:   st.PidsStats.Current,
		Disk:        -1,
	}
	for _, n := range st.Networks {
		u.NetworkRx += n.RxBytes
		u.NetworkTx += n.TxBytes
	}
	return u
}
