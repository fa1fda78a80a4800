package docker

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
)

// fakeMeter answers the two requests of Usage; the rest of API is nil.
type fakeMeter struct {
	API
	state    *container.State
	after    *container.State // what an inspect without size says
	sizeRw   *int64
	stats    string // the stats body
	inspErr  error
	version  string // Podman's
	versions int    // ServerVersion calls
}

func (f *fakeMeter) ServerVersion(ctx context.Context, o client.ServerVersionOptions) (client.ServerVersionResult, error) {
	f.versions++
	return client.ServerVersionResult{Components: []system.ComponentVersion{{Name: "Podman Engine", Version: f.version}}}, nil
}

func (f *fakeMeter) ContainerInspect(ctx context.Context, id string, o client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	if f.inspErr != nil {
		return client.ContainerInspectResult{}, f.inspErr
	}
	if !o.Size { // asked again after the stats failed
		return client.ContainerInspectResult{Container: container.InspectResponse{ID: id, State: f.after}}, nil
	}
	return client.ContainerInspectResult{Container: container.InspectResponse{ID: id, State: f.state, SizeRw: f.sizeRw}}, nil
}

func (f *fakeMeter) ContainerStats(ctx context.Context, id string, o client.ContainerStatsOptions) (client.ContainerStatsResult, error) {
	if o.Stream || o.IncludePreviousSample {
		return client.ContainerStatsResult{}, errors.New("not one-shot")
	}
	return client.ContainerStatsResult{Body: io.NopCloser(strings.NewReader(f.stats))}, nil
}

// A cgroup v1 sample of Docker 20.10 (trimmed): the memory less
// total_inactive_file, the networks summed.
const statsV1 = `{"read":"2026-12-04T10:00:02.5Z","pids_stats":{"current":3},
"networks":{"eth0":{"rx_bytes":1000,"tx_bytes":200},"eth1":{"rx_bytes":24,"tx_bytes":6}},
"cpu_stats":{"cpu_usage":{"total_usage":1500000000}},
"memory_stats":{"usage":10485760,"max_usage":115343360,"limit":536870912,
"stats":{"inactive_file":1,"total_inactive_file":2097152}}}`

func TestUsage(t *testing.T) {
	size := int64(20 << 20)
	f := &fakeMeter{state: &container.State{Status: "running", Running: true, StartedAt: "2026-12-04T10:00:00.5Z"}, sizeRw: &size, stats: statsV1}
	u, err := (&Engine{Client: f}).Usage(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Usage{
		Read: time.Date(2026, 12, 4, 10, 0, 2, 5e8, time.UTC), Started: time.Date(2026, 12, 4, 10, 0, 0, 5e8, time.UTC),
		CPU: 1500 * time.Millisecond, Memory: 8 << 20, MemoryPeak: 110 << 20, MemoryLimit: 512 << 20,
		Processes: 3, NetworkRx: 1024, NetworkTx: 206, Disk: 20 << 20,
	}
	if !u.Read.Equal(want.Read) || !u.Started.Equal(want.Started) {
		t.Errorf("Read %v Started %v, want %v %v", u.Read, u.Started, want.Read, want.Started)
	}
	u.Read, u.Started, want.Read, want.Started = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if u != want {
		t.Errorf("Usage\n %+v, want\n %+v", u, want)
	}

	// No size (an engine that gives none): -1. A paused container is measured.
	f.sizeRw, f.state = nil, &container.State{Status: "paused", Running: true, Paused: true}
	if u, err := (&Engine{Client: f}).Usage(context.Background(), "c"); err != nil || u.Disk != -1 || !u.Started.IsZero() {
		t.Errorf("paused, no size: %+v, %v; want Disk -1, no start", u, err)
	}

	// The container stopped as the stats were asked: the daemon's answer
	// is empty, and the container says why.
	f.stats, f.after = "", &container.State{Status: "exited"}
	if _, err := (&Engine{Client: f}).Usage(context.Background(), "c"); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("stopped during the stats: %v, want ErrNotRunning", err)
	}
	f.after = &container.State{Status: "running", Running: true}
	if _, err := (&Engine{Client: f}).Usage(context.Background(), "c"); err == nil || errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("an empty stats answer of a running container: %v, want an error other than ErrNotRunning", err)
	}

	f.state = &container.State{Status: "exited"}
	if _, err := (&Engine{Client: f}).Usage(context.Background(), "c"); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("exited: %v, want ErrNotRunning", err)
	}
	f.inspErr = cerrdefs.ErrNotFound.WithMessage("No such container: c")
	if _, err := (&Engine{Client: f}).Usage(context.Background(), "c"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("missing: %v, want ErrNotFound", err)
	}
}

// The memory less the inactive page cache: cgroup v2's key, and never
// below zero.
func TestUsageOfMemory(t *testing.T) {
	for _, c := range []struct {
		stats map[string]uint64
		usage uint64
		want  uint64
	}{
		{map[string]uint64{"inactive_file": 3 << 20}, 10 << 20, 7 << 20},        // v2
		{map[string]uint64{"total_inactive_file": 12 << 20}, 10 << 20, 0},       // never below 0
		{map[string]uint64{"total_inactive_file": 0, "inactive_file": 5}, 9, 9}, // v1 first
		{nil, 4096, 4096},
	} {
		u := usageOf(container.StatsResponse{MemoryStats: container.MemoryStats{Usage: c.usage, Stats: c.stats}})
		if u.Memory != c.want {
			t.Errorf("usage %d, stats %v: Memory %d, want %d", c.usage, c.stats, u.Memory, c.want)
		}
	}
}

// Podman before 4.4 swaps the network's directions; the engine puts them
// back.
func TestPodmanSwapsNetwork(t *testing.T) {
	for v, want := range map[string]bool{"4.3.1": true, "3.4.4": true, "4.4.0": false, "5.2.1": false, "": false} {
		if got := podmanBefore44(v); got != want {
			t.Errorf("podmanBefore44(%q) = %v, want %v", v, got, want)
		}
	}
	f := &fakeMeter{state: &container.State{Status: "running", Running: true}, stats: statsV1, version: "4.3.1"}
	e := &Engine{Client: f, Podman: true}
	for range 2 { // the version is asked once
		u, err := e.Usage(context.Background(), "c")
		if err != nil || u.NetworkRx != 206 || u.NetworkTx != 1024 {
			t.Errorf("Podman 4.3.1: rx %d tx %d, %v; want 206 1024", u.NetworkRx, u.NetworkTx, err)
		}
	}
	if f.versions != 1 {
		t.Errorf("the version was asked %d times, want once", f.versions)
	}
}
