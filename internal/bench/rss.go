package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// peakRSS runs the 256 MiB measurement in a fresh process, so that nothing
// else this process did counts, and returns its peak RSS in MiB. The child
// reports its own VmHWM: the rusage of a child counts the parent's memory,
// because Linux carries the high-water mark across fork and exec.
func peakRSS(args []string) (float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, append([]string{"-rss-child"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("256 MiB output run: %w", err)
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		return 0, fmt.Errorf("256 MiB output run printed %q", out)
	}
	return math.Round(kib/1024*10) / 10, nil
}

// bigOutput has one command print 256 MiB, then prints this process's
// peak RSS in KiB.
func bigOutput(ctx context.Context, opts []sandbox.Option) error {
	sb, err := sandbox.New(ctx, opts...)
	if err != nil {
		return err
	}
	defer sb.Close()
	resp, err := sb.Execute(ctx, "head -c 268435456 /dev/zero")
	if err != nil {
		return err
	}
	if !resp.Truncated || resp.ExitCode != 0 {
		return fmt.Errorf("256 MiB command: exit %d, truncated %v", resp.ExitCode, resp.Truncated)
	}
	hwm, err := vmHWM()
	if err == nil {
		fmt.Println(hwm)
	}
	return err
}

// vmHWM returns this process's peak RSS in KiB, from /proc/self/status.
func vmHWM() (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSuffix(strings.TrimSpace(v), " kB"), nil
		}
	}
	return "", fmt.Errorf("no VmHWM in /proc/self/status")
}
