// Command sandbox-bench measures the sandbox's operations against a real
// Docker daemon and prints the median milliseconds of each as JSON, plus
// the host process's peak RSS while one command prints 256 MiB.
//
//	go run ./cmd/sandbox-bench -image python:3.13-slim -n 20
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/client"
)

func main() {
	image := flag.String("image", sandbox.DefaultImage, "image to benchmark on")
	n := flag.Int("n", 20, "iterations per operation")
	rssChild := flag.Bool("rss-child", false, "internal: run only the 256 MiB output measurement")
	flag.Parse()
	if *n < 1 {
		fail(fmt.Errorf("-n must be at least 1"))
	}
	ctx := context.Background()
	if *rssChild {
		fail(bigOutput(ctx, *image))
		return
	}
	out, err := run(ctx, *image, *n)
	fail(err)
	rss, err := peakRSS(*image)
	fail(err)
	out["peak_rss_mib"] = rss
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	fail(enc.Encode(out))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
		os.Exit(1)
	}
}

// run times each operation n times and returns the medians in milliseconds.
func run(ctx context.Context, image string, n int) (map[string]float64, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	opts := []sandbox.Option{sandbox.WithImage(image), sandbox.WithClient(cli), sandbox.WithPullPolicy(sandbox.PullNever)}
	samples := map[string][]time.Duration{}
	timeIt := func(name string, fn func() error) error {
		start := time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		samples[name] = append(samples[name], time.Since(start))
		return nil
	}

	for range n {
		var sb *sandbox.DockerSandbox
		if err := timeIt("create", func() (err error) { sb, err = sandbox.New(ctx, opts...); return err }); err != nil {
			return nil, err
		}
		if err := timeIt("close", sb.Close); err != nil {
			return nil, err
		}
	}

	sb, err := sandbox.New(ctx, opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	oneK := bytes.Repeat([]byte("0123456789abcdef"), 64)
	big := bytes.Repeat([]byte("x"), 32<<20)
	ops := []struct {
		name string
		fn   func() error
	}{
		{"raw_exec", func() error { return rawExec(ctx, cli, sb.ID()) }},
		{"exec_echo", func() error { _, err := sb.Execute(ctx, "echo hi"); return err }},
		{"write_1k", func() error { return sb.Write(ctx, "bench/file.txt", oneK) }},
		{"read_1k", func() error { _, err := sb.Read(ctx, "bench/file.txt"); return err }},
		{"edit", func() error {
			_, err := sb.Edit(ctx, "bench/file.txt", "0123", "3210", true)
			if err == nil {
				_, err = sb.Edit(ctx, "bench/file.txt", "3210", "0123", true)
			}
			return err
		}},
		{"ls", func() error { _, err := sb.Ls(ctx, "bench"); return err }},
		{"grep", func() error { _, err := sb.Grep(ctx, "abcdef", sandbox.GrepPath("bench")); return err }},
		{"glob", func() error { _, err := sb.Glob(ctx, "*.txt", sb.WorkingDir()); return err }},
		{"upload_1k", func() error { return upload(ctx, sb, "bench/up1k", oneK) }},
		{"download_1k", func() error { return download(ctx, sb, "bench/up1k", len(oneK)) }},
		{"upload_32m", func() error { return upload(ctx, sb, "bench/up32m", big) }},
		{"download_32m", func() error { return download(ctx, sb, "bench/up32m", len(big)) }},
	}
	for _, op := range ops {
		for range n {
			if err := timeIt(op.name, op.fn); err != nil {
				return nil, err
			}
		}
	}
	out := map[string]float64{}
	for name, d := range samples {
		out[name] = median(d)
	}
	return out, nil
}

// rawExec runs `true` with one plain Docker exec, as a baseline.
func rawExec(ctx context.Context, cli *client.Client, id string) error {
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer att.Close()
	_, err = io.Copy(io.Discard, att.Reader)
	return err
}

func upload(ctx context.Context, sb *sandbox.DockerSandbox, p string, content []byte) error {
	res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: p, Content: content}})
	if err == nil {
		err = res[0].Err
	}
	return err
}

func download(ctx context.Context, sb *sandbox.DockerSandbox, p string, size int) error {
	res, err := sb.DownloadFiles(ctx, []string{p})
	if err == nil {
		err = res[0].Err
	}
	if err == nil && len(res[0].Content) != size {
		err = fmt.Errorf("downloaded %d bytes, want %d", len(res[0].Content), size)
	}
	return err
}

func median(d []time.Duration) float64 {
	slices.Sort(d)
	m := d[len(d)/2]
	if len(d)%2 == 0 {
		m = (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return float64(m.Microseconds()) / 1000
}

// peakRSS runs the 256 MiB measurement in a fresh process, so that nothing
// else this process did counts, and returns its peak RSS in MiB. The child
// reports its own VmHWM: the rusage of a child counts the parent's memory,
// because Linux carries the high-water mark across fork and exec.
func peakRSS(image string) (float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, "-rss-child", "-image", image)
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

// bigOutput has one command print 256 MiB.
func bigOutput(ctx context.Context, image string) error {
	sb, err := sandbox.New(ctx, sandbox.WithImage(image), sandbox.WithPullPolicy(sandbox.PullNever))
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
