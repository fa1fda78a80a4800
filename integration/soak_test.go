//go:build linux

package integration

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The soak test is opt-in:
//
//	go test -run TestSoak -soak -timeout 30m .
//	go test -run TestSoak -soak -soak.sandboxes 20 -soak.ops 1000 -soak.rounds 3 .
var (
	soak          = flag.Bool("soak", false, "run TestSoak: thousands of mixed operations across many sandboxes, checking for leaks")
	soakSandboxes = flag.Int("soak.sandboxes", 10, "TestSoak: sandboxes per round")
	soakOps       = flag.Int("soak.ops", 500, "TestSoak: operations per sandbox per round")
	soakWorkers   = flag.Int("soak.workers", 4, "TestSoak: concurrent callers per sandbox")
	soakRounds    = flag.Int("soak.rounds", 2, "TestSoak: rounds (sandboxes are created and closed in each)")
)

// resources is what the host process holds.
type resources struct {
	Goroutines int
	FDs        int
	Containers int   // this process's sandboxes on the daemon
	HeapBytes  int64 // live heap after a GC
	RSSBytes   int64
}

func (r resources) String() string {
	return fmt.Sprintf("goroutines %d, fds %d, containers %d, heap %.1f MiB, rss %.1f MiB",
		r.Goroutines, r.FDs, r.Containers, float64(r.HeapBytes)/(1<<20), float64(r.RSSBytes)/(1<<20))
}

// soakClient counts containers; one client for all samples, so that the
// sampling itself holds no more connections as it goes.
var soakClient *client.Client

func sample(t *testing.T) resources {
	t.Helper()
	ids, err := testenv.Leaked(context.Background(), soakClient, testenv.Owner())
	require.NoError(t, err)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return resources{
		Goroutines: runtime.NumGoroutine(),
		FDs:        len(fds),
		Containers: len(ids),
		HeapBytes:  int64(ms.HeapAlloc),
		RSSBytes:   procStatus(t, "VmRSS"),
	}
}

// settled samples until goroutines and fds are back near base (the
// connections of closed sandboxes take a moment to wind down), at most 30 s.
func settled(t *testing.T, base resources) resources {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := sample(t)
		if r.Goroutines <= base.Goroutines+soakSlackGoroutines && r.FDs <= base.FDs+soakSlackFDs || time.Now().After(deadline) {
			return r
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Slack allowed between samples: background goroutines of the runtime and
// the HTTP client come and go; the heap varies with the GC's timing.
const (
	soakSlackGoroutines = 10
	soakSlackFDs        = 10
	soakSlackHeap       = 16 << 20
)

// opStats collects the latency of each kind of operation.
type opStats struct {
	mu  sync.Mutex
	lat map[string][]time.Duration
}

func (s *opStats) add(op string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat[op] = append(s.lat[op], d)
}

func (s *opStats) report(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ops := make([]string, 0, len(s.lat))
	total := 0
	for op, l := range s.lat {
		ops = append(ops, op)
		total += len(l)
	}
	sort.Strings(ops)
	t.Logf("%d operations:", total)
	t.Logf("  %-14s %6s %9s %9s %9s", "op", "count", "p50 ms", "p99 ms", "max ms")
	for _, op := range ops {
		l := slices.Clone(s.lat[op])
		slices.Sort(l)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		t.Logf("  %-14s %6d %9.1f %9.1f %9.1f", op, len(l), ms(l[len(l)/2]), ms(l[len(l)*99/100]), ms(l[len(l)-1]))
	}
}

// soakOp runs one random operation on sb and checks its result.
func soakOp(ctx context.Context, sb *sandbox.Sandbox, rng *rand.Rand, dir string, stats *opStats) error {
	name := fmt.Sprintf("%s/f%d.txt", dir, rng.IntN(20))
	content := []byte(strings.Repeat(fmt.Sprintf("line %d needle\n", rng.IntN(1000)), 1+rng.IntN(200)))
	ops := []string{"execute", "execute", "write", "read", "edit", "ls", "glob", "grep", "upload", "download", "upload_2m", "download_2m"}
	op := ops[rng.IntN(len(ops))]
	if strings.HasSuffix(op, "_2m") && rng.IntN(10) != 0 {
		op = strings.TrimSuffix(op, "_2m") // large transfers are rarer
	}
	start := time.Now()
	defer func() { stats.add(op, time.Since(start)) }()
	switch op {
	case "execute":
		n := rng.IntN(1000)
		res, err := sb.Execute(ctx, fmt.Sprintf("echo %d; ls %s >/dev/null 2>&1; true", n, dir))
		if err != nil {
			return err
		}
		if res.Output != fmt.Sprintf("%d\n", n) || res.ExitCode != 0 {
			return fmt.Errorf("execute: got %q, exit %d", res.Output, res.ExitCode)
		}
	case "write":
		return sb.Write(ctx, name, content)
	case "read":
		if err := sb.Write(ctx, name, content); err != nil {
			return err
		}
		page, err := sb.Read(ctx, name, sandbox.ReadLimit(5000))
		if err != nil {
			return err
		}
		if page.Content+"\n" != string(content) {
			// Another worker may have rewritten the file in between.
			if !strings.HasPrefix(page.Content, "line ") {
				return fmt.Errorf("read %s: got %.40q", name, page.Content)
			}
		}
	case "edit":
		p := fmt.Sprintf("%s/edit-%d.txt", dir, rng.Int())
		if err := sb.Write(ctx, p, []byte("alpha beta\n")); err != nil {
			return err
		}
		if n, err := sb.Edit(ctx, p, "beta", "gamma", false); err != nil || n != 1 {
			return fmt.Errorf("edit: %d, %v", n, err)
		}
		return sb.Delete(ctx, p)
	case "ls":
		_, err := sb.Ls(ctx, dir)
		return err
	case "glob":
		_, err := sb.Glob(ctx, "*.txt", dir)
		return err
	case "grep":
		_, err := sb.Grep(ctx, "needle", dir, sandbox.GrepMaxCount(50))
		return err
	case "upload", "upload_2m", "download", "download_2m":
		if strings.HasSuffix(op, "_2m") {
			content = bytes.Repeat([]byte{byte(rng.IntN(256))}, 2<<20) // through Docker's archive API
		}
		p := fmt.Sprintf("%s/x-%d.bin", dir, rng.Int())
		up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: p, Content: content}})
		if err != nil {
			return err
		}
		if up[0].Err != nil {
			return up[0].Err
		}
		if strings.HasPrefix(op, "download") {
			down, err := sb.DownloadFiles(ctx, []string{p})
			if err != nil {
				return err
			}
			if down[0].Err != nil || !bytes.Equal(down[0].Content, content) {
				return fmt.Errorf("download %s: %d bytes, %v", p, len(down[0].Content), down[0].Err)
			}
		}
		return sb.Delete(ctx, p)
	}
	return nil
}

// soakRound creates sandboxes, runs the operations on them concurrently and
// closes them; it returns the resources sampled at the busiest point.
func soakRound(t *testing.T, round int, stats *opStats) resources {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sbs := make([]*sandbox.Sandbox, *soakSandboxes)
	var wg sync.WaitGroup
	errs := make(chan error, *soakSandboxes**soakWorkers+*soakSandboxes)
	sem := make(chan struct{}, 8)
	for i := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			sb, err := sandbox.New(ctx, sandboxOptions(images[i%len(images)])...)
			stats.add("create", time.Since(start))
			if err != nil {
				errs <- err
				return
			}
			sbs[i] = sb
		}()
	}
	wg.Wait()
	defer func() {
		for _, sb := range sbs {
			if sb != nil {
				start := time.Now()
				assert.NoError(t, sb.Close())
				stats.add("close", time.Since(start))
			}
		}
	}()
	for len(errs) > 0 {
		require.NoError(t, <-errs)
	}

	var busiest resources
	var once sync.Once
	perWorker := *soakOps / *soakWorkers
	for i, sb := range sbs {
		for w := range *soakWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(i**soakWorkers+w)))
				dir := fmt.Sprintf("/workspace/soak/w%d", w)
				if err := sb.Write(ctx, dir+"/seed.txt", []byte("seed needle\n")); err != nil {
					errs <- err
					return
				}
				for n := range perWorker {
					if err := soakOp(ctx, sb, rng, dir, stats); err != nil {
						errs <- fmt.Errorf("sandbox %d worker %d op %d: %w", i, w, n, err)
						return
					}
					if i == 0 && w == 0 && n == perWorker/2 {
						once.Do(func() { busiest = sample(t) })
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	return busiest
}

// TestSoak runs thousands of mixed operations across many sandboxes, in
// rounds, and checks that the host process does not grow: goroutines, open
// files, containers and heap are back where they were after each round.
// RELIABILITY.md has the figures of a run.
func TestSoak(t *testing.T) {
	if !*soak {
		t.Skip("opt-in: go test -run TestSoak -soak")
	}
	soakClient = testenv.Client(t)
	stats := &opStats{lat: map[string][]time.Duration{}}
	// Warm up: the first sandbox initialises what lives for the process.
	sb := newSandbox(t, testenv.BusyboxImage)
	require.NoError(t, sb.Write(testCtx(t), "/workspace/warm/seed.txt", []byte("seed needle\n")))
	rng := rand.New(rand.NewPCG(0, 0))
	for range 50 {
		require.NoError(t, soakOp(testCtx(t), sb, rng, "/workspace/warm", &opStats{lat: map[string][]time.Duration{}}))
	}
	require.NoError(t, sb.Close())

	start := time.Now()
	before := settled(t, sample(t))
	t.Logf("before:       %v", before)
	var after []resources
	for round := range *soakRounds {
		busy := soakRound(t, round, stats)
		t.Logf("round %d busy: %v", round+1, busy)
		r := settled(t, before)
		t.Logf("round %d done: %v", round+1, r)
		after = append(after, r)
	}
	t.Logf("%d rounds × %d sandboxes × %d operations in %v (%d workers per sandbox)",
		*soakRounds, *soakSandboxes, *soakOps, time.Since(start).Round(time.Second), *soakWorkers)
	stats.report(t)

	last := after[len(after)-1]
	if last.Goroutines > before.Goroutines+2 && testing.Verbose() {
		buf := make([]byte, 1<<20)
		t.Logf("goroutines left:\n%s", buf[:runtime.Stack(buf, true)])
	}
	assert.LessOrEqual(t, last.Goroutines, before.Goroutines+soakSlackGoroutines, "goroutines")
	assert.LessOrEqual(t, last.FDs, before.FDs+soakSlackFDs, "open files")
	assert.Equal(t, before.Containers, last.Containers, "containers")
	assert.LessOrEqual(t, last.HeapBytes, before.HeapBytes+soakSlackHeap, "heap")
	if len(after) > 1 { // no growth from round to round either
		prev := after[len(after)-2]
		assert.LessOrEqual(t, last.Goroutines, prev.Goroutines+soakSlackGoroutines, "goroutines, round to round")
		assert.LessOrEqual(t, last.FDs, prev.FDs+soakSlackFDs, "open files, round to round")
		assert.LessOrEqual(t, last.HeapBytes, prev.HeapBytes+soakSlackHeap, "heap, round to round")
	}
}
