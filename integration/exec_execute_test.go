package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecute(t *testing.T) {
	t.Parallel()
	for _, image := range images {
		t.Run(image, func(t *testing.T) {
			sb := newSandbox(t, image)
			ctx := testCtx(t)
			run := func(cmd string, opts ...sandbox.ExecOption) sandbox.ExecuteResponse {
				t.Helper()
				resp, err := sb.Execute(ctx, cmd, opts...)
				require.NoError(t, err)
				return resp
			}

			t.Run("output and exit code", func(t *testing.T) {
				resp := run("echo hello; exit 3")
				assert.Equal(t, "hello\n", resp.Output)
				assert.Equal(t, 3, resp.ExitCode)
				assert.False(t, resp.Truncated)
			})
			t.Run("stdout and stderr in arrival order", func(t *testing.T) {
				resp := run("echo 1; echo 2 >&2; echo 3; echo 4 >&2")
				assert.Equal(t, "1\n2\n3\n4\n", resp.Output)
			})
			t.Run("working dir", func(t *testing.T) {
				assert.Equal(t, "/workspace\n", run("pwd").Output)
				run("mkdir -p sub")
				assert.Equal(t, "/workspace/sub\n", run("pwd", sandbox.ExecDir("sub")).Output)
			})
			t.Run("env", func(t *testing.T) {
				assert.Equal(t, "a b\n", run(`echo "$X $Y"`, sandbox.ExecEnv("X=a", "Y=b")).Output)
			})
			t.Run("no stdin", func(t *testing.T) {
				assert.Equal(t, "0\n", run("cat | wc -c | tr -d ' '").Output)
			})
			t.Run("not found is 127", func(t *testing.T) {
				assert.Equal(t, 127, run("no-such-command-xyz").ExitCode)
			})
			t.Run("signal exit code", func(t *testing.T) {
				assert.Equal(t, 137, run("kill -9 $$").ExitCode)
			})
			t.Run("shell quoting is the caller's", func(t *testing.T) {
				assert.Equal(t, "it's $HOME `x`\n", run("printf '%s\\n' \"it's \\$HOME \\`x\\`\"").Output)
			})
			t.Run("invalid UTF-8 is replaced", func(t *testing.T) {
				resp := run(`printf 'a\377b'`)
				assert.Equal(t, "a\uFFFDb", resp.Output)
			})
		})
	}
}

func TestExecuteErrors(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	_, err := sb.Execute(ctx, "")
	assert.ErrorIs(t, err, sandbox.ErrEmptyCommand)
	_, err = sb.Execute(ctx, "true", sandbox.ExecTimeout(-time.Second))
	assert.Error(t, err)
	_, err = sb.Execute(ctx, "true", sandbox.ExecEnv("novalue"))
	assert.Error(t, err)
	resp, err := sb.Execute(ctx, "pwd", sandbox.ExecDir("/no/such/dir"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, 0, len(resp.Output))
}

// processes lists the command lines of the processes in the sandbox.
func processes(t *testing.T, sb *sandbox.Sandbox) string {
	t.Helper()
	resp, err := sb.Execute(context.Background(), "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
	require.NoError(t, err)
	return resp.Output
}

func TestExecuteTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	// A backgrounded grandchild, a child in its own session, and a foreground child.
	cmd := "echo started; (sleep 1001 &); setsid sleep 1002 & sleep 1003"
	resp, err := sb.Execute(ctx, cmd, sandbox.ExecTimeout(time.Second))
	require.NoError(t, err)
	assert.Equal(t, 124, resp.ExitCode)
	assert.True(t, resp.TimedOut)
	assert.Equal(t, "started\nError: Command timed out after 1 seconds.", resp.Output)
	ps := processes(t, sb)
	for _, s := range []string{"sleep 1001", "sleep 1002", "sleep 1003"} {
		assert.NotContains(t, ps, s)
	}

	resp, err = sb.Execute(ctx, "sleep 5", sandbox.ExecTimeout(1500*time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, "Error: Command timed out after 1.5 seconds.", resp.Output)
}

func TestExecuteCancelKillsTree(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := sb.Execute(ctx, "echo partial; sleep 2001 & sleep 2002", sandbox.ExecTimeout(0))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "partial\n", resp.Output)
	ps := processes(t, sb)
	assert.NotContains(t, ps, "sleep 2001")
	assert.NotContains(t, ps, "sleep 2002")
}

func TestExecuteNoTimeout(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithExecuteTimeout(time.Millisecond))
	ctx := testCtx(t)
	resp, err := sb.Execute(ctx, "sleep 0.2; echo done", sandbox.ExecTimeout(0))
	require.NoError(t, err)
	assert.Equal(t, "done\n", resp.Output)
	// The sandbox default applies when the call does not say.
	resp, err = sb.Execute(ctx, "sleep 1")
	require.NoError(t, err)
	assert.True(t, resp.TimedOut)
	assert.Equal(t, "Error: Command timed out after 0.001 seconds.", resp.Output)
}

func TestExecuteBackgroundDoesNotHold(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	// The background sleep keeps the output open; Execute still returns
	// when the shell exits, and the sleep keeps running.
	resp, err := sb.Execute(ctx, "sleep 3003 & echo ok", sandbox.ExecTimeout(30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", resp.Output)
	assert.False(t, resp.TimedOut)
	assert.Contains(t, processes(t, sb), "sleep 3003")
}

func TestExecuteTruncation(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithMaxOutputBytes(1000))
	ctx := testCtx(t)
	resp, err := sb.Execute(ctx, "head -c 5000 /dev/zero | tr '\\0' a; echo done > /tmp/done")
	require.NoError(t, err)
	assert.True(t, resp.Truncated)
	assert.Equal(t, strings.Repeat("a", 1000)+"\n\n... Output truncated at 1000 bytes.", resp.Output)
	resp, err = sb.Execute(ctx, "cat /tmp/done")
	require.NoError(t, err)
	assert.Equal(t, "done\n", resp.Output, "the command ran to completion")

	// Exactly the cap is not truncated.
	resp, err = sb.Execute(ctx, "head -c 1000 /dev/zero | tr '\\0' b")
	require.NoError(t, err)
	assert.False(t, resp.Truncated)
	assert.Len(t, resp.Output, 1000)

	// A multi-byte character cut by the cap is dropped, not mangled.
	resp, err = sb.Execute(ctx, "i=0; while [ $i -lt 400 ]; do printf 'aé€'; i=$((i+1)); done")
	require.NoError(t, err)
	assert.True(t, resp.Truncated)
	body := strings.TrimSuffix(resp.Output, "\n\n... Output truncated at 1000 bytes.")
	assert.True(t, strings.HasPrefix(strings.Repeat("aé€", 400), body))
	assert.Equal(t, 999, len(body)) // 166 × 6 bytes, then "aé"; the first byte of "€" is dropped
}

func TestExecuteStreamsOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithMaxOutputBytes(10))
	ctx := testCtx(t)
	var buf bytes.Buffer
	resp, err := sb.Execute(ctx, "seq 1 100", sandbox.ExecOutput(&buf))
	require.NoError(t, err)
	assert.True(t, resp.Truncated)
	assert.Equal(t, 292, buf.Len(), "the writer gets everything, uncapped")
}

func TestCmd(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)

	t.Run("separate streams and stdin", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		c := sb.Command(ctx, "cat; echo err >&2")
		c.Stdin = strings.NewReader("from stdin")
		c.Stdout, c.Stderr = &stdout, &stderr
		require.NoError(t, c.Run())
		assert.Equal(t, "from stdin", stdout.String())
		assert.Equal(t, "err\n", stderr.String())
		assert.True(t, c.ProcessState.Success())
	})
	t.Run("large stdin", func(t *testing.T) {
		var stdout bytes.Buffer
		c := sb.Command(ctx, "wc -c | tr -d ' '")
		c.Stdin = bytes.NewReader(make([]byte, 5<<20))
		c.Stdout = &stdout
		require.NoError(t, c.Run())
		assert.Equal(t, "5242880\n", stdout.String())
	})
	t.Run("exit error", func(t *testing.T) {
		c := sb.Command(ctx, "exit 7")
		err := c.Run()
		var ee *sandbox.ExitError
		require.True(t, errors.As(err, &ee))
		assert.Equal(t, 7, ee.ExitCode())
		assert.Equal(t, 7, c.ProcessState.ExitCode())
	})
	t.Run("timeout", func(t *testing.T) {
		c := sb.Command(ctx, "sleep 10")
		c.Timeout = 200 * time.Millisecond
		err := c.Run()
		var ee *sandbox.ExitError
		require.True(t, errors.As(err, &ee))
		assert.True(t, ee.TimedOut())
		assert.Equal(t, 124, ee.ExitCode())
	})
	t.Run("start and wait", func(t *testing.T) {
		var out bytes.Buffer
		c := sb.Command(ctx, "echo $A")
		c.Env = []string{"A=1"}
		c.Stdout = &out
		require.NoError(t, c.Start())
		require.Error(t, c.Start())
		require.NoError(t, c.Wait())
		require.Error(t, c.Wait())
		assert.Equal(t, "1\n", out.String())
	})
	t.Run("slow writer", func(t *testing.T) {
		// Output the caller is slow to take (longer than a silent helper
		// is given) is not a silent helper.
		w := &slowWriter{delay: 11 * time.Second}
		c := sb.Command(ctx, "echo a; sleep 1; echo b")
		c.Stdout = w
		require.NoError(t, c.Run())
		assert.Equal(t, "a\nb\n", w.buf.String())
	})
	t.Run("user", func(t *testing.T) {
		requireExecAs(t)
		var out bytes.Buffer
		c := sb.Command(ctx, "id -u")
		c.User, c.Stdout = "sandbox", &out
		require.NoError(t, c.Run())
		assert.Equal(t, "1000\n", out.String())
	})
}

// slowWriter takes delay to accept its first write.
type slowWriter struct {
	delay time.Duration
	buf   bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		time.Sleep(w.delay)
	}
	return w.buf.Write(p)
}

// ExecCapture keeps a command's whole output in a file in the sandbox while
// Output stays capped: sizes, newlines and the tail are the file's; a cap
// cuts the file and says so; a bad path is the caller's error, and a file
// the helper cannot create fails the call, not the sandbox.
func TestExecuteCapture(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	// 40,000 lines of 80 bytes (3.2 MB), the failure last.
	const cmd = `i=0; while [ $i -lt 40000 ]; do printf '%079d\n' $i; i=$((i+1)); done; echo "FAIL: the last line" >&2; exit 1`
	const total = 40000*80 + len("FAIL: the last line\n")

	t.Run("whole output", func(t *testing.T) {
		resp, err := sb.Execute(ctx, cmd, sandbox.ExecCapture("/tmp/capture/whole", 0))
		require.NoError(t, err)
		assert.Equal(t, 1, resp.ExitCode)
		assert.True(t, resp.Truncated, "Output is capped as without a capture")
		c := resp.Capture
		require.NotNil(t, c)
		assert.Equal(t, "/tmp/capture/whole", c.Path)
		assert.EqualValues(t, total, c.Size)
		assert.EqualValues(t, total, c.Total)
		assert.EqualValues(t, 40001, c.Lines)
		assert.False(t, c.Capped())
		require.NoError(t, c.Err)
		assert.Len(t, c.Tail, sandbox.CaptureTailBytes)
		assert.True(t, bytes.HasSuffix(c.Tail, []byte("\n0000000000000000000000000000000000000000000000000000000000000000000000000039999\nFAIL: the last line\n")), "%q", c.Tail)
		b, err := sb.FS(ctx).ReadFile("tmp/capture/whole")
		require.NoError(t, err)
		require.Len(t, b, total)
		assert.True(t, bytes.HasPrefix(b, []byte(strings.Repeat("0", 79)+"\n")))
		assert.True(t, bytes.HasSuffix(b, c.Tail))
	})
	t.Run("the cap cuts the file", func(t *testing.T) {
		resp, err := sb.Execute(ctx, cmd, sandbox.ExecCapture("/tmp/capture/capped", 1<<20))
		require.NoError(t, err)
		c := resp.Capture
		require.NotNil(t, c)
		assert.EqualValues(t, 1<<20, c.Size)
		assert.EqualValues(t, total, c.Total)
		assert.True(t, c.Capped())
		assert.EqualValues(t, (1<<20)/80, c.Lines)
		b, err := sb.FS(ctx).ReadFile("tmp/capture/capped")
		require.NoError(t, err)
		assert.Len(t, b, 1<<20)
		assert.True(t, bytes.HasSuffix(b, c.Tail))
	})
	t.Run("an existing file is replaced", func(t *testing.T) {
		resp, err := sb.Execute(ctx, "echo short", sandbox.ExecCapture("/tmp/capture/whole", 0))
		require.NoError(t, err)
		assert.EqualValues(t, 6, resp.Capture.Size)
		assert.Equal(t, "short\n", string(resp.Capture.Tail))
		b, err := sb.FS(ctx).ReadFile("tmp/capture/whole")
		require.NoError(t, err)
		assert.Equal(t, "short\n", string(b))
	})
	t.Run("bad options", func(t *testing.T) {
		_, err := sb.Execute(ctx, "true", sandbox.ExecCapture("relative", 0))
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
		_, err = sb.Execute(ctx, "true", sandbox.ExecCapture("/tmp/x", -1))
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	})
	t.Run("a file the helper cannot create", func(t *testing.T) {
		_, err := sb.Execute(ctx, "echo hi > /tmp/capture-ran", sandbox.ExecCapture("/proc/self/nope/out", 0))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nope")
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe, "%v", err)
		assert.Equal(t, "capture", pe.Op)
		assert.Equal(t, "/proc/self/nope/out", pe.Path)
		_, err = sb.Stat(ctx, "/tmp/capture-ran")
		assert.ErrorIs(t, err, fs.ErrNotExist, "the command did not run")
		resp, err := sb.Execute(ctx, "echo ok")
		require.NoError(t, err, "the sandbox stays usable")
		assert.Equal(t, "ok\n", resp.Output)
	})
}
