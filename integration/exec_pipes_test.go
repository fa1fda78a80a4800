package integration

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Output, CombinedOutput and the pipes follow os/exec's rules; each
// subtest mirrors an os/exec test or documented rule.
func TestCmdOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)

	t.Run("output", func(t *testing.T) { // os/exec TestEcho
		out, err := sb.Command(ctx, "echo foo bar; echo to stderr >&2").Output()
		require.NoError(t, err)
		assert.Equal(t, "foo bar\n", string(out))
	})
	t.Run("stderr captured", func(t *testing.T) { // os/exec TestOutputStderrCapture
		out, err := sb.Command(ctx, "echo out; echo some stderr text >&2; exit 1").Output()
		var ee *sandbox.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, "some stderr text\n", string(ee.Stderr))
		assert.Equal(t, 1, ee.ExitCode())
		assert.Equal(t, "out\n", string(out))
	})
	t.Run("stderr capped", func(t *testing.T) { // os/exec's prefixSuffixSaver: first and last 32 KiB
		_, err := sb.Command(ctx, "echo first >&2; head -c 200000 /dev/zero | tr '\\0' x >&2; echo; echo last >&2; exit 3").Output()
		var ee *sandbox.ExitError
		require.ErrorAs(t, err, &ee)
		s := string(ee.Stderr)
		assert.True(t, strings.HasPrefix(s, "first\n"))
		assert.True(t, strings.HasSuffix(s, "last\n"))
		assert.Contains(t, s, "\n... omitting ")
		assert.Less(t, len(s), 64<<10+100)
	})
	t.Run("stderr set is not captured", func(t *testing.T) {
		var stderr bytes.Buffer
		c := sb.Command(ctx, "echo e >&2; exit 2")
		c.Stderr = &stderr
		_, err := c.Output()
		var ee *sandbox.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Nil(t, ee.Stderr)
		assert.Equal(t, "e\n", stderr.String())
	})
	t.Run("stdout already set", func(t *testing.T) {
		c := sb.Command(ctx, "true")
		c.Stdout = io.Discard
		_, err := c.Output()
		assert.EqualError(t, err, "sandbox: Stdout already set")
		_, err = c.CombinedOutput()
		assert.EqualError(t, err, "sandbox: Stdout already set")
		c = sb.Command(ctx, "true")
		c.Stderr = io.Discard
		_, err = c.CombinedOutput()
		assert.EqualError(t, err, "sandbox: Stderr already set")
	})
	t.Run("combined output", func(t *testing.T) { // os/exec TestCatStdin/TestExitStatus with both streams
		out, err := sb.Command(ctx, "echo 1; echo 2 >&2; echo 3; echo 4 >&2; exit 5").CombinedOutput()
		var ee *sandbox.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 5, ee.ExitCode())
		assert.Nil(t, ee.Stderr)
		assert.Equal(t, "1\n2\n3\n4\n", string(out))
	})
	t.Run("output held within max download bytes", func(t *testing.T) {
		small := newSandbox(t, testenv.BusyboxImage, sandbox.WithMaxDownloadBytes(1<<20))
		start := time.Now()
		out, err := small.Command(ctx, "yes").Output()
		assert.ErrorIs(t, err, sandbox.ErrTooLarge)
		assert.LessOrEqual(t, len(out), 1<<20)
		assert.Less(t, time.Since(start), 30*time.Second, "the command is killed")
	})
}

func TestCmdPipes(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)

	t.Run("stdin stdout stderr", func(t *testing.T) { // os/exec TestPipes
		c := sb.Command(ctx, `while read -r line; do case $line in O:*) echo "$line";; E:*) echo "$line" >&2;; esac; done`)
		stdin, err := c.StdinPipe()
		require.NoError(t, err)
		stdout, err := c.StdoutPipe()
		require.NoError(t, err)
		stderr, err := c.StderrPipe()
		require.NoError(t, err)
		outbr, errbr := bufio.NewReader(stdout), bufio.NewReader(stderr)
		line := func(br *bufio.Reader) string {
			l, err := br.ReadString('\n')
			require.NoError(t, err)
			return l
		}
		require.NoError(t, c.Start())
		_, err = io.WriteString(stdin, "O:I am output\n")
		require.NoError(t, err)
		assert.Equal(t, "O:I am output\n", line(outbr))
		_, err = io.WriteString(stdin, "E:I am error\n")
		require.NoError(t, err)
		assert.Equal(t, "E:I am error\n", line(errbr))
		_, err = io.WriteString(stdin, "O:I am output2\n")
		require.NoError(t, err)
		assert.Equal(t, "O:I am output2\n", line(outbr))
		require.NoError(t, stdin.Close())
		_, err = outbr.ReadByte()
		assert.Equal(t, io.EOF, err, "stdout ends when the command does")
		require.NoError(t, c.Wait())
	})
	t.Run("read to the end then wait", func(t *testing.T) { // os/exec ExampleCmd_StdoutPipe
		c := sb.Command(ctx, "seq 1 100000")
		stdout, err := c.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.Start())
		n, err := io.Copy(io.Discard, stdout)
		require.NoError(t, err)
		assert.Equal(t, int64(588895), n)
		require.NoError(t, c.Wait())
		_, err = stdout.Read(make([]byte, 1))
		assert.Error(t, err, "Wait closed the pipe")
	})
	t.Run("small output unread", func(t *testing.T) {
		// As with an OS pipe, output that fits the pipe does not hold up
		// the command; Wait then closes the pipe.
		c := sb.Command(ctx, "echo hi; exit 4")
		_, err := c.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.Start())
		var ee *sandbox.ExitError
		require.ErrorAs(t, c.Wait(), &ee)
		assert.Equal(t, 4, ee.ExitCode())
	})
	t.Run("large output unread is bounded by the timeout", func(t *testing.T) {
		c := sb.Command(ctx, "yes")
		// The timeout runs from Start: at a load of 16 a start alone took
		// over a second.
		c.Timeout = 5 * time.Second
		_, err := c.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.Start())
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			var ee *sandbox.ExitError
			if errors.As(err, &ee) {
				assert.True(t, ee.TimedOut())
			} else {
				assert.Error(t, err)
			}
		case <-time.After(45 * time.Second):
			t.Fatal("Wait did not return with the pipe unread")
		}
		t.Logf("Wait returned after %v", time.Since(start))
	})
	t.Run("closing the reader ends the command", func(t *testing.T) { // os/exec: SIGPIPE
		c := sb.Command(ctx, "yes")
		stdout, err := c.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.Start())
		_, err = io.ReadFull(stdout, make([]byte, 100))
		require.NoError(t, err)
		require.NoError(t, stdout.Close())
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err := <-done:
			assert.Error(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the command outlived its closed pipe")
		}
	})
	t.Run("stdin closed by wait", func(t *testing.T) { // os/exec TestStdinClose
		c := sb.Command(ctx, "head -c 3")
		stdin, err := c.StdinPipe()
		require.NoError(t, err)
		out, err := c.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, c.Start())
		_, err = io.WriteString(stdin, "abcdef")
		require.NoError(t, err)
		got, err := io.ReadAll(out)
		require.NoError(t, err)
		assert.Equal(t, "abc", string(got))
		require.NoError(t, c.Wait())
		_, err = io.WriteString(stdin, "more")
		assert.Error(t, err, "Wait closed stdin")
	})
	t.Run("rules", func(t *testing.T) {
		c := sb.Command(ctx, "true")
		c.Stdin, c.Stdout, c.Stderr = strings.NewReader(""), io.Discard, io.Discard
		_, err := c.StdinPipe()
		assert.EqualError(t, err, "sandbox: Stdin already set")
		_, err = c.StdoutPipe()
		assert.EqualError(t, err, "sandbox: Stdout already set")
		_, err = c.StderrPipe()
		assert.EqualError(t, err, "sandbox: Stderr already set")

		c = sb.Command(ctx, "true")
		require.NoError(t, c.Start())
		_, err = c.StdinPipe()
		assert.EqualError(t, err, "sandbox: StdinPipe after the command started")
		_, err = c.StdoutPipe()
		assert.EqualError(t, err, "sandbox: StdoutPipe after the command started")
		_, err = c.StderrPipe()
		assert.EqualError(t, err, "sandbox: StderrPipe after the command started")
		require.NoError(t, c.Wait())
	})
	t.Run("failed start closes the pipes", func(t *testing.T) {
		c := sb.Command(ctx, "true")
		c.Timeout = -1
		stdout, err := c.StdoutPipe()
		require.NoError(t, err)
		require.Error(t, c.Start())
		_, err = stdout.Read(make([]byte, 1))
		assert.Error(t, err)
	})
}
