package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statsKeys are the keys of stats -json, sorted.
var statsKeys = []string{"cpu_ns", "cpu_percent", "disk_bytes", "id", "memory_bytes", "memory_limit_bytes", "memory_peak_bytes",
	"network_rx_bytes", "network_tx_bytes", "processes", "read", "started"}

// stats prints a row like docker stats; -json one line of the documented
// keys; -watch a sample every -interval until SIGINT, then exits 0. Bad
// usage exits 2; an unknown ID says so.
func TestCLIStats(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := filepath.Join(t.TempDir(), "sandbox")
	built, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(built))
	run := func(t *testing.T, args ...string) (string, string, int) {
		t.Helper()
		return runBin(t, bin, "", args...)
	}

	for _, args := range [][]string{{"stats"}, {"stats", "a", "b"}, {"stats", "-watch", "-interval", "10ms", "id"}} {
		_, _, code := run(t, args...)
		assert.Equal(t, 2, code, "%v", args)
	}
	_, errOut, code := run(t, "stats", "nosuchsandbox0")
	assert.Equal(t, 1, code)
	assert.Equal(t, "sandbox stats: no such sandbox: nosuchsandbox0\n", errOut)

	out, errOut, code := run(t, "create", "-image", testenv.BusyboxImage, "-pull", "never", "-network", "none", "-memory", "256m", "-json")
	require.Equal(t, 0, code, errOut)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	id := created.ID
	t.Cleanup(func() { run(t, "rm", id) })

	out, errOut, code = run(t, "stats", id)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"ID", "CPU", "%", "MEM", "/", "LIMIT", "PEAK", "PIDS", "NET", "RX", "/", "TX", "DISK"}, strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.GreaterOrEqual(t, len(row), 9, lines[1])
	assert.Equal(t, id, row[0])
	assert.True(t, strings.HasSuffix(row[1], "%"), row[1])
	assert.Contains(t, lines[1], " / 256MiB", "MEM / LIMIT, in binary units")

	out, errOut, code = run(t, "stats", "-json", id)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 1, strings.Count(out, "\n"), "one line: %s", out)
	assert.Equal(t, statsKeys, jsonKeys(t, out))
	for _, k := range statsKeys {
		assert.Regexp(t, snake, k)
	}
	var s struct {
		ID        string  `json:"id"`
		Processes uint64  `json:"processes"`
		Limit     uint64  `json:"memory_limit_bytes"`
		Memory    uint64  `json:"memory_bytes"`
		CPU       float64 `json:"cpu_percent"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, id, s.ID)
	assert.GreaterOrEqual(t, s.Processes, uint64(1))
	assert.EqualValues(t, 256<<20, s.Limit)
	assert.Greater(t, s.Memory, uint64(0))

	// -watch: a line every 200 ms until SIGINT, then exit 0.
	c := exec.Command(bin, "stats", "-watch", "-interval", "200ms", "-json", id)
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	c.Stderr = &stderr
	require.NoError(t, c.Start())
	defer c.Process.Kill()
	sc := bufio.NewScanner(stdout)
	start := time.Now()
	var reads []time.Time
	for len(reads) < 3 && sc.Scan() {
		var u struct {
			Read time.Time `json:"read"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &u), sc.Text())
		reads = append(reads, u.Read)
	}
	require.Len(t, reads, 3, "stderr: %s", stderr.String())
	t.Logf("3 samples in %v", time.Since(start))
	assert.Greater(t, reads[2].Sub(reads[0]), 300*time.Millisecond, "two intervals of 200 ms")
	require.NoError(t, c.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() {
		for sc.Scan() { // drain, so that a write never blocks the exit
		}
		done <- c.Wait()
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "exit after an interrupt; stderr: %s", stderr.String())
	case <-time.After(5 * time.Second):
		t.Fatal("stats -watch did not exit within 5 s of SIGINT")
	}
	assert.Empty(t, stderr.String())
}
