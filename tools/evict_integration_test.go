package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callWithID calls a tool as the model's tool call id.
func callWithID(t *testing.T, set []tools.Tool, id, name, arguments string) tools.Result {
	t.Helper()
	tool, ok := tools.Lookup(set, name)
	require.True(t, ok, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if id != "" {
		ctx = tools.WithCallID(ctx, id)
	}
	return tool.Call(ctx, json.RawMessage(arguments))
}

var savedAt = regexp.MustCompile(`^Tool result too large, the result of this tool call (\S+) was saved in the filesystem at this path: (\S+)\n`)

// readAll pages through path with read_file, as a model would, and
// returns the lines (without their numbers).
func readAll(t *testing.T, set []tools.Tool, path string) []string {
	t.Helper()
	var lines []string
	row := regexp.MustCompile(`^ *([0-9]+)  (.*)$`)
	for offset := 0; ; offset += 800 {
		res := callWithID(t, set, "", "read_file", fmt.Sprintf(`{"file_path": %q, "offset": %d, "limit": 800}`, path, offset))
		require.False(t, res.IsError, res.Text)
		n := 0
		for _, l := range strings.Split(res.Text, "\n") {
			m := row.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			lines = append(lines, m[2])
			n++
		}
		if n < 800 {
			return lines
		}
		require.Less(t, offset, 1<<20, "read_file never ends")
	}
}

// Results over the threshold are saved in the sandbox and replaced by
// deepagents' message; under it, off, or from an excepted tool they stay.
func TestEviction(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage)
	set := tools.New(sb, tools.Options{})
	status := "\n[Command succeeded with exit code 0]"
	// A command printing n characters (no newline).
	printN := func(n int) string { return fmt.Sprintf(`{"command": "yes x | tr -d '\\n' | head -c %d"}`, n) }

	t.Run("just under the threshold", func(t *testing.T) {
		res := callWithID(t, set, "under", "execute", printN(80000-len(status)))
		require.False(t, res.IsError)
		assert.Len(t, res.Text, 80000)
		assert.True(t, strings.HasSuffix(res.Text, status))
	})
	t.Run("just over", func(t *testing.T) {
		res := callWithID(t, set, "toolu_01.over/x", "execute", printN(80001-len(status)))
		require.False(t, res.IsError)
		m := savedAt.FindStringSubmatch(res.Text)
		require.NotNil(t, m, "%.300s", res.Text)
		assert.Equal(t, "toolu_01.over/x", m[1], "the model's own ID")
		assert.Equal(t, "/large_tool_results/toolu_01_over_x", m[2], "deepagents' sanitized name")
		assert.Contains(t, res.Text, "\n\n1  "+strings.Repeat("x", 1000)+"\n2  [Command succeeded with exit code 0]\n")
		require.NotNil(t, res.ExitCode)
		assert.Equal(t, 0, *res.ExitCode, "the exit code stays the result's")
		b, err := sb.FS(context.Background()).ReadFile(strings.TrimPrefix(m[2], "/"))
		require.NoError(t, err)
		assert.Equal(t, strings.Repeat("x", 80001-len(status))+status, string(b), "the file holds the result the model would have had")
	})
	t.Run("an ID made when the call has none", func(t *testing.T) {
		res := callWithID(t, set, "", "execute", printN(100000))
		m := savedAt.FindStringSubmatch(res.Text)
		require.NotNil(t, m, "%.300s", res.Text)
		assert.Regexp(t, `^call_[0-9a-f]{24}$`, m[1])
		assert.Equal(t, "/large_tool_results/"+m[1], m[2])
	})
	t.Run("ls is never evicted", func(t *testing.T) {
		_, err := sb.Execute(context.Background(), `mkdir -p /tmp/many && cd /tmp/many && i=0; while [ $i -lt 1500 ]; do touch "$(printf 'file-%080d' $i)"; i=$((i+1)); done`)
		require.NoError(t, err)
		res := callWithID(t, set, "ls", "ls", `{"path": "/tmp/many"}`)
		require.False(t, res.IsError, "%.200s", res.Text)
		assert.NotContains(t, res.Text, "Tool result too large")
		assert.Greater(t, len(res.Text), 80000)
	})
	t.Run("off", func(t *testing.T) {
		off := tools.New(sb, tools.Options{EvictTokens: -1})
		res := callWithID(t, off, "off", "execute", printN(200000))
		assert.Len(t, res.Text, 200000+len(status))
	})
	t.Run("a directory that cannot be written keeps the result inline", func(t *testing.T) {
		ro := tools.New(sb, tools.Options{EvictDir: "/proc/nope"})
		res := callWithID(t, ro, "ro", "execute", printN(100000))
		assert.Len(t, res.Text, 100000+len(status))
	})
}

// Capture at the source: a command printing 2 MiB whose failing line is
// last gives the model that line and the path, from which read_file pages
// through the whole output and grep finds any line; under the budget the
// output is inline and the file goes; the cap is said; host memory stays
// bounded whatever the command prints.
func TestCaptureOutput(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage)
	set := tools.New(sb, tools.Options{CaptureOutput: true, MaxCaptureBytes: 4 << 20})
	// 26,215 lines of 80 bytes (just over 2 MiB), then the failure.
	const cmd = `i=0; while [ $i -lt 26215 ]; do printf 'line %074d\n' $i; i=$((i+1)); done; echo 'FAIL: assertion at the very end' >&2; exit 1`

	t.Run("2 MiB, the failure last", func(t *testing.T) {
		res := callWithID(t, set, "call_2mib", "execute", fmt.Sprintf(`{"command": %q}`, cmd))
		require.False(t, res.IsError, "%.300s", res.Text)
		require.NotNil(t, res.ExitCode)
		assert.Equal(t, 1, *res.ExitCode)
		m := savedAt.FindStringSubmatch(res.Text)
		require.NotNil(t, m, "%.500s", res.Text)
		assert.Equal(t, "/large_tool_results/call_2mib", m[2])
		assert.Contains(t, res.Text, ":\n\n[Command failed with exit code 1]\nline 00")
		assert.Contains(t, res.Text, "\n... [26206 lines truncated] ...\n")
		assert.True(t, strings.HasSuffix(res.Text, fmt.Sprintf("line %074d\nFAIL: assertion at the very end\n\n", 26214)), "%q", res.Text[len(res.Text)-200:])
		assert.Less(t, len(res.Text), 3000)

		lines := readAll(t, set, m[2])
		require.Len(t, lines, 26216)
		for i, l := range lines[:26215] {
			if l != fmt.Sprintf("line %074d", i) {
				t.Fatalf("line %d: %q", i+1, l)
			}
		}
		assert.Equal(t, "FAIL: assertion at the very end", lines[26215])
		g := callWithID(t, set, "", "grep", fmt.Sprintf(`{"pattern": "line %074d", "path": "/large_tool_results", "output_mode": "content"}`, 13000))
		require.False(t, g.IsError, g.Text)
		assert.Contains(t, g.Text, "/large_tool_results/call_2mib")
	})
	t.Run("under the budget: inline, no file", func(t *testing.T) {
		res := callWithID(t, set, "call_small", "execute", `{"command": "echo small; exit 3"}`)
		assert.Equal(t, "small\n\n[Command failed with exit code 3]", res.Text)
		_, err := sb.FS(context.Background()).ReadFile("large_tool_results/call_small")
		assert.Error(t, err, "the file went")
	})
	t.Run("the cap, and host memory", func(t *testing.T) {
		stopHeap := testenv.WatchHeap(16 << 20)
		res := callWithID(t, set, "call_cap", "execute", `{"command": "yes 0123456789abcdef | head -c 200000000; echo END"}`)
		base, peak := stopHeap()
		require.False(t, res.IsError, "%.300s", res.Text)
		assert.Contains(t, res.Text, "[Command succeeded with exit code 0]\n[Output exceeded the capture size limit and was truncated; the saved file is incomplete]\n")
		fi, err := sb.Stat(context.Background(), "/large_tool_results/call_cap")
		require.NoError(t, err)
		assert.EqualValues(t, 4<<20, fi.Size())
		grew := int64(peak) - int64(base)
		t.Logf("heap in use grew by %d KiB at most (base %d KiB)", grew>>10, base>>10)
		assert.Less(t, grew, int64(32<<20), "host memory is bounded whatever the command prints")
	})
	t.Run("a directory that cannot be written: inline, run once", func(t *testing.T) {
		ro := tools.New(sb, tools.Options{CaptureOutput: true, EvictDir: "/proc/nope"})
		res := callWithID(t, ro, "ro", "execute", `{"command": "echo ran >> /tmp/ro-runs; echo small; exit 3"}`)
		assert.Equal(t, "small\n\n[Command failed with exit code 3]", res.Text)
		runs, err := sb.FS(context.Background()).ReadFile("tmp/ro-runs")
		require.NoError(t, err)
		assert.Equal(t, "ran\n", string(runs), "the capture was refused before the command ran, then it ran once")
	})
}
