package tools_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExecuteOutputCapEndToEnd: a command that prints 64 MiB of bytes that
// escaping triples (NUL, ESC, invalid UTF-8, C1 and a mix of them) gives
// the model at most the 512000-byte cap plus the marker and status lines,
// as valid UTF-8. Before the cap applied after escaping, NULs gave 1.5 MB.
// Eviction is off: it would save the capped text in the sandbox instead
// (TestEviction).
func TestExecuteOutputCapEndToEnd(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage)
	set := tools.New(sb, tools.Options{EvictTokens: -1})
	a := agent{t: t, set: set}
	const limit = sandbox.DefaultMaxOutputBytes
	marker := fmt.Sprintf("\n\n... Output truncated at %d bytes.", limit)
	status := "\n[Command succeeded with exit code 0]\n[Output was truncated due to size limits]"
	const zeros = "head -c 67108864 /dev/zero"
	for name, command := range map[string]string{
		"NULs":    zeros,
		"ESC":     zeros + ` | tr '\000' '\033'`,
		"invalid": zeros + ` | tr '\000' '\377'`,
		"C1":      `yes "$(printf '\302\233\302\205')" | head -c 67108864`,
		"mix":     `yes "$(printf 'a\000\033[2J\377\302\233\r\342\202')" | head -c 67108864`,
	} {
		t.Run(name, func(t *testing.T) {
			res := a.call("execute", args("command", command))
			require.False(t, res.IsError, res.Text)
			require.NotNil(t, res.ExitCode)
			assert.Equal(t, 0, *res.ExitCode, "%.200q", res.Text)
			assert.True(t, utf8.ValidString(res.Text))
			assert.LessOrEqual(t, len(res.Text), limit+len(marker)+len(status), "bytes the model receives")
			if name != "invalid" { // the library turns a run of invalid bytes into one U+FFFD
				assert.Greater(t, len(res.Text), limit-100, "the cap is used, not shrunk")
			}
			assert.True(t, strings.HasSuffix(res.Text, marker+status), "%q", res.Text[max(0, len(res.Text)-200):])
			assert.NotContains(t, res.Text, "\x00")
			assert.NotContains(t, res.Text, "\x1b")
		})
	}
}

// TestReadAndGrepCapAfterEscaping: read_file and grep cap the escaped text
// (80000 characters, deepagents' unit), not the bytes before escaping.
func TestReadAndGrepCapAfterEscaping(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage)
	a := agent{t: t, set: tools.New(sb, tools.Options{})}
	// 400 KiB of lines of control bytes, one match per line (invalid UTF-8
	// would make the file binary for read_file).
	a.sh(`yes "$(printf 'needle \033[2J\302\233\001\002\003\004\005\006\007\010\177')" | head -c 409600 > /workspace/hostile.txt`)
	a.sh(`head -c 409600 /dev/zero | tr '\000' '\033' > /workspace/esc.txt`)
	const slack = 1000 // the truncation messages
	for _, file := range []string{"hostile.txt", "esc.txt"} {
		res := a.call("read_file", args("file_path", file, "limit", 100000))
		require.False(t, res.IsError, "%.300s", res.Text)
		assert.True(t, utf8.ValidString(res.Text))
		assert.LessOrEqual(t, utf8.RuneCountInString(res.Text), 80000+slack, file)
		assert.Greater(t, utf8.RuneCountInString(res.Text), 70000, file)
		assert.NotContains(t, res.Text, "\x1b")
	}
	res := a.call("grep", args("pattern", "needle", "output_mode", "content", "max_count", 100000))
	require.False(t, res.IsError, "%.300s", res.Text)
	assert.True(t, utf8.ValidString(res.Text))
	assert.LessOrEqual(t, utf8.RuneCountInString(res.Text), 80000+slack)
	assert.Greater(t, utf8.RuneCountInString(res.Text), 70000)
	assert.NotContains(t, res.Text, "\x1b")
}

// TestExecuteTimeoutZeroIsTheMaximum: {"timeout": 0} runs for the maximum
// at most, not unbounded; above it is refused.
func TestExecuteTimeoutZeroIsTheMaximum(t *testing.T) {
	sb := sandboxtest.New(t, testenv.BusyboxImage)
	a := agent{t: t, set: tools.New(sb, tools.Options{MaxExecuteTimeout: 2 * time.Second})}
	start := time.Now()
	res := a.call("execute", args("command", "sleep 60", "timeout", 0))
	took := time.Since(start)
	require.NotNil(t, res.ExitCode, res.Text)
	assert.Equal(t, 124, *res.ExitCode, res.Text)
	assert.Contains(t, res.Text, "Error: Command timed out after 2 seconds.")
	assert.GreaterOrEqual(t, took, 2*time.Second)
	assert.Less(t, took, 20*time.Second)
	a.fails("execute", args("command", "sleep 60", "timeout", 3), "Error: timeout 3s exceeds maximum allowed (2s).")
}
