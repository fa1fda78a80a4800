package sandboxmcp_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var evictedAt = regexp.MustCompile(`^Tool result too large, the result of this tool call (\S+) was saved in the filesystem at this path: (\S+)\n`)

// What the model sees of large results, through a real MCP client and the
// sandbox-mcp command: with -capture-output a command printing 2 MiB whose
// failing line is last gives that line and the path, from which read_file
// pages through the whole output; results just under and over the
// threshold; the capture cap said, the server's peak RSS bounded;
// -evict-tokens 0 turns eviction off. The session tools: Ctrl-C on a
// session without a tty is 130, the locale is Codex's.
func TestLargeResults(t *testing.T) {
	bin := buildCommand(t)
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cs, cmd, _ := startStdio(t, bin, append(commandArgs(label), "-capture-output", "-exec-tools")...)
	status := "\n[Command succeeded with exit code 0]"
	printN := func(n int) map[string]any {
		return map[string]any{"command": fmt.Sprintf(`yes x | tr -d '\n' | head -c %d`, n)}
	}

	t.Run("just under and just over", func(t *testing.T) {
		out := callOK(t, ctx, cs, "execute", printN(80000-len(status)))
		assert.Len(t, out, 80000)
		out = callOK(t, ctx, cs, "execute", printN(80001-len(status)))
		m := evictedAt.FindStringSubmatch(out)
		require.NotNil(t, m, "%.300s", out)
		assert.Regexp(t, `^call_[0-9a-f]{24}$`, m[1], "the server made an ID")
	})
	t.Run("the client's call ID", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: printN(100000),
			Meta: mcp.Meta{sandboxmcp.MetaToolCallID: "toolu_01.A"}})
		require.NoError(t, err)
		m := evictedAt.FindStringSubmatch(text(t, res))
		require.NotNil(t, m)
		assert.Equal(t, "toolu_01.A", m[1])
		assert.Equal(t, "/large_tool_results/toolu_01_A", m[2])
	})
	t.Run("2 MiB, the failure last", func(t *testing.T) {
		const cmd = `i=0; while [ $i -lt 26215 ]; do printf 'line %074d\n' $i; i=$((i+1)); done; echo 'FAIL: assertion at the very end' >&2; exit 1`
		res := call(t, ctx, cs, "execute", map[string]any{"command": cmd})
		out := text(t, res)
		assert.Equal(t, float64(1), res.Meta[sandboxmcp.MetaExitCode])
		assert.Contains(t, out, "[Command failed with exit code 1]\n")
		assert.Contains(t, out, "FAIL: assertion at the very end\n")
		m := evictedAt.FindStringSubmatch(out)
		require.NotNil(t, m, "%.300s", out)
		var lines []string
		for offset := 0; ; offset += 800 {
			page := callOK(t, ctx, cs, "read_file", map[string]any{"file_path": m[2], "offset": offset, "limit": 800})
			n := 0
			for _, row := range strings.Split(page, "\n") {
				if _, l, ok := strings.Cut(row, "  "); ok {
					lines = append(lines, l)
					n++
				}
			}
			if n < 800 {
				break
			}
		}
		require.Len(t, lines, 26216)
		assert.Equal(t, fmt.Sprintf("line %074d", 12345), lines[12345])
		assert.Equal(t, "FAIL: assertion at the very end", lines[26215])
	})
	t.Run("the cap, and the server's memory", func(t *testing.T) {
		out := callOK(t, ctx, cs, "execute", map[string]any{"command": "yes 0123456789abcdef | head -c 300000000; echo END"})
		assert.Contains(t, out, "[Command succeeded with exit code 0]\n[Output exceeded the capture size limit and was truncated; the saved file is incomplete]\n")
		hwm := vmHWM(t, cmd.Process.Pid)
		t.Logf("sandbox-mcp peak RSS %d MiB", hwm>>20)
		assert.Less(t, hwm, int64(96<<20), "the server's peak RSS after 300 MB of output")
	})
	t.Run("session tools", func(t *testing.T) {
		out := callOK(t, ctx, cs, "exec_command", map[string]any{"cmd": "echo $LANG $LC_CTYPE $LC_ALL; sleep 30", "yield_time_ms": 500})
		assert.Contains(t, out, "C.UTF-8 C.UTF-8 C.UTF-8\n")
		m := sessionRE.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		id, _ := strconv.Atoi(m[1])
		out = callOK(t, ctx, cs, "write_stdin", map[string]any{"session_id": id, "chars": "\u0003", "yield_time_ms": 10000})
		assert.Contains(t, out, "\nProcess exited with code 130\n")
	})
	t.Run("off", func(t *testing.T) {
		label := newLabel(t)
		removeLeftovers(t, label)
		off, _, _ := startStdio(t, bin, append(commandArgs(label), "-evict-tokens", "0")...)
		out := callOK(t, ctx, off, "execute", printN(200000))
		assert.Len(t, out, 200000+len(status))
	})
}

// vmHWM is a process's peak resident set size.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
