package integration

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heredoc is an agent's way to write a file: cat of body from a heredoc.
func heredoc(body string) string {
	return "cat <<'EOF'\n" + body + "\nEOF"
}

// Commands over Linux's 128 KiB argument limit run, as sh -c runs them: a
// 200 KiB heredoc's output is exact, on the shared channel and on an exec
// of its own; 1 MiB and 4 MiB commands run; $0, $#, stdin and the exit
// status are the shell's; the timeout kills the tree; Cmd and StartProcess
// take them too.
func TestExecuteLongCommand(t *testing.T) {
	t.Parallel()
	for _, image := range images {
		t.Run(image, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, image, sandbox.WithMaxOutputBytes(1<<20))
			ctx := testCtx(t)
			body := strings.Repeat("0123456789abcde\n", 200<<10/16)

			resp, err := sb.Execute(ctx, heredoc(body))
			require.NoError(t, err)
			assert.Equal(t, 0, resp.ExitCode)
			assert.True(t, resp.Output == body+"\n", "200 KiB heredoc, shared channel: %d bytes back", len(resp.Output))

			var streamed bytes.Buffer // an exec of its own
			resp, err = sb.Execute(ctx, heredoc(body)+"\nexit 3", sandbox.ExecOutput(&streamed))
			require.NoError(t, err)
			assert.Equal(t, 3, resp.ExitCode)
			assert.True(t, resp.Output == body+"\n" && streamed.String() == body+"\n", "200 KiB heredoc, own exec: %d and %d bytes back", len(resp.Output), streamed.Len())

			for _, n := range []int{1 << 20, 4 << 20} {
				resp, err = sb.Execute(ctx, "cat <<'EOF' | wc -c\n"+strings.Repeat("x", n)+"\nEOF")
				require.NoError(t, err, "%d bytes", n)
				assert.Equal(t, n+1, atoi(t, resp.Output), "%d bytes", n)
			}

			long := `echo "$0 $#"; if [ -e /dev/fd/3 ]; then echo fd 3 leaked; fi; tr a-z A-Z # ` + strings.Repeat("y", 1<<20)
			var out bytes.Buffer
			c := sb.Command(ctx, long)
			c.Stdin, c.Stdout, c.Stderr = strings.NewReader("shout"), &out, &out
			require.NoError(t, c.Run())
			assert.Equal(t, "/bin/sh 0\nSHOUT", out.String())

			resp, err = sb.Execute(ctx, "sleep 3001 & sleep 3002 # "+strings.Repeat("z", 1<<20), sandbox.ExecTimeout(500*time.Millisecond))
			require.NoError(t, err)
			assert.True(t, resp.TimedOut)
			ps := processes(t, sb)
			assert.NotContains(t, ps, "sleep 3001")
			assert.NotContains(t, ps, "sleep 3002")

			p, err := sb.StartProcess(ctx, "echo started; exit 5 # "+strings.Repeat("p", 1<<20))
			require.NoError(t, err)
			info, err := p.Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, 5, info.ExitCode)
			assert.Len(t, info.Command, 8<<10, "the table keeps the first 8 KiB")
			o, err := p.Read(ctx, 0)
			require.NoError(t, err)
			assert.Equal(t, "started\n", string(o.Data))
		})
	}
}

// A command over MaxCommandBytes is ErrCommandTooLong, saying the limit,
// from Execute, Cmd and StartProcess, before anything runs (never a
// missing file); the sandbox stays usable.
func TestExecuteCommandTooLong(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	over := strings.Repeat("x", sandbox.MaxCommandBytes+1)
	_, err := sb.Execute(ctx, over)
	require.ErrorIs(t, err, sandbox.ErrCommandTooLong)
	assert.Contains(t, err.Error(), "16777216")
	assert.Empty(t, sandbox.ErrorCode(err))
	assert.NotErrorIs(t, err, sandbox.ErrHelper)
	assert.ErrorIs(t, sb.Command(ctx, over).Run(), sandbox.ErrCommandTooLong)
	_, err = sb.StartProcess(ctx, over)
	assert.ErrorIs(t, err, sandbox.ErrCommandTooLong)

	// The largest command allowed runs; of JSON's worst bytes too.
	resp, err := sb.Execute(ctx, ": '"+strings.Repeat("<\x01", (sandbox.MaxCommandBytes-20)/2)+"'; echo ok")
	require.NoError(t, err)
	assert.Equal(t, "ok\n", resp.Output)
}

// An unknown ExecUser or Cmd.User is ErrUnknownUser naming the user, the
// caller's mistake, not ErrHelper; the sandbox stays usable, on the shared
// channel and on an exec of its own.
func TestExecuteUnknownUser(t *testing.T) {
	t.Parallel()
	for _, image := range images {
		t.Run(image, func(t *testing.T) {
			t.Parallel()
			sb := newSandbox(t, image)
			ctx := testCtx(t)
			for _, user := range []string{"nosuchuser", "root:nosuchgroup"} {
				_, err := sb.Execute(ctx, "id", sandbox.ExecUser(user))
				require.ErrorIs(t, err, sandbox.ErrUnknownUser, "%s", user)
				assert.NotErrorIs(t, err, sandbox.ErrHelper)
				assert.Contains(t, err.Error(), user)
			}
			c := sb.Command(ctx, "id")
			c.User = "nosuchuser"
			err := c.Run()
			require.ErrorIs(t, err, sandbox.ErrUnknownUser)
			assert.Contains(t, err.Error(), `"nosuchuser"`)
			assert.True(t, errors.Is(err, sandbox.ErrUnknownUser) && !errors.Is(err, sandbox.ErrHelper))

			resp, err := sb.Execute(ctx, "echo ok")
			require.NoError(t, err)
			assert.Equal(t, "ok\n", resp.Output)
			resp, err = sb.Execute(ctx, "id -u", sandbox.ExecUser("4242"), sandbox.ExecDir("/"))
			require.NoError(t, err, "a uid need not be in /etc/passwd")
			assert.Equal(t, "4242\n", resp.Output)
			resp, err = sb.Execute(ctx, "id -u", sandbox.ExecUser("root"))
			require.NoError(t, err)
			assert.Equal(t, "0\n", resp.Output)
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	require.NoError(t, err, "%d bytes: %.40q", len(s), s)
	return n
}
