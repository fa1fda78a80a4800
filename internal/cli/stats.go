package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/docker/go-units"
	"github.com/dockersandbox/sandbox"
)

// statsEntry is one sample of stats -json: the sandbox's ID and its
// sandbox.Usage (snake_case keys, with units).
type statsEntry struct {
	ID string `json:"id"`
	sandbox.Usage
}

// stats prints a sandbox's usage: one sample, or one every -interval with
// -watch until interrupted.
func stats(ctx context.Context, args []string) error {
	fs := newFlags("stats", "[-json] [-watch [-interval 1s]] ID")
	asJSON := fs.Bool("json", false, `print each sample as one line of JSON: {"id", "read", "started", "cpu_ns", "cpu_percent", "memory_bytes", "memory_peak_bytes", "memory_limit_bytes", "processes", "network_rx_bytes", "network_tx_bytes", "disk_bytes"}`)
	watch := fs.Bool("watch", false, "print a sample every -interval until interrupted")
	every := fs.Duration("interval", time.Second, "time between samples with -watch (at least 100ms)")
	choice := engineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: stats needs one ID", errUsage)
	}
	if *every < 100*time.Millisecond {
		return fmt.Errorf("%w: -interval %v: at least 100ms", errUsage, *every)
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	sb, err := attach(ctx, eng, fs.Arg(0), sandbox.WithAutoRemove(false))
	if err != nil {
		return err
	}
	defer sb.Detach()
	id := sb.ID()
	w := bufio.NewWriter(os.Stdout)
	emit := func(u sandbox.Usage) error {
		if *asJSON {
			b, err := json.Marshal(statsEntry{ID: id, Usage: u})
			if err != nil {
				return err
			}
			_, _ = w.Write(append(b, '\n'))
		} else {
			printStatsRow(w, id, u)
		}
		return w.Flush()
	}
	if !*asJSON {
		printStatsHeader(w)
	}
	if !*watch {
		u, err := sb.Usage(ctx)
		if err != nil {
			return err
		}
		return emit(u)
	}
	for u, err := range sb.WatchUsage(ctx, *every) {
		if err != nil {
			return err
		}
		if err := emit(u); err != nil {
			return err
		}
	}
	return nil // interrupted
}

// statsColumns lays out the table of stats, as docker stats does.
const statsColumns = "%-12s  %-7s  %-21s  %-9s  %-5s  %-21s  %s\n"

func printStatsHeader(w io.Writer) {
	fmt.Fprintf(w, statsColumns, "ID", "CPU %", "MEM / LIMIT", "PEAK", "PIDS", "NET RX / TX", "DISK")
}

// printStatsRow prints u: memory and disk in binary units (MiB), the
// network in decimal ones (kB, MB), as docker stats does; "-" for what the
// engine does not say.
func printStatsRow(w io.Writer, id string, u sandbox.Usage) {
	peak, disk := "-", "-"
	if u.MemoryPeak > 0 {
		peak = units.BytesSize(float64(u.MemoryPeak))
	}
	if u.Disk >= 0 {
		disk = units.BytesSize(float64(u.Disk))
	}
	fmt.Fprintf(w, statsColumns, id, fmt.Sprintf("%.2f%%", u.CPUPercent),
		units.BytesSize(float64(u.Memory))+" / "+units.BytesSize(float64(u.MemoryLimit)),
		peak, fmt.Sprint(u.Processes),
		units.HumanSize(float64(u.NetworkRx))+" / "+units.HumanSize(float64(u.NetworkTx)), disk)
}
