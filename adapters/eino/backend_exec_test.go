package sandboxeino_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/adk/filesystem"
	"github.com/cloudwego/eino/schema"
	"github.com/dockersandbox/sandbox"
	sandboxeino "github.com/dockersandbox/sandbox/adapters/eino"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recvAll reads the stream to its end: the chunks, and the error it ended
// with (nil at io.EOF).
func recvAll(sr *schema.StreamReader[*filesystem.ExecuteResponse]) ([]*filesystem.ExecuteResponse, error) {
	defer sr.Close()
	var chunks []*filesystem.ExecuteResponse
	for {
		c, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
}

func joined(chunks []*filesystem.ExecuteResponse) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.Output)
	}
	return b.String()
}

// TestExecuteStreamingAsProduced: the first line arrives while the command
// still waits for the test to let it finish; a character split between two
// writes arrives whole.
func TestExecuteStreamingAsProduced(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	b := sandboxeino.NewBackend(sb)
	sr, err := b.ExecuteStreaming(ctx, &filesystem.ExecuteRequest{
		Command: `echo one; printf '\303'; while [ ! -e go ]; do sleep 0.1; done; printf '\251\n'; exit 5`,
	})
	require.NoError(t, err)
	first, err := sr.Recv()
	for err == nil && first.Output == "" && first.ExitCode == nil {
		first, err = sr.Recv() // an empty chunk while the command is silent
	}
	require.NoError(t, err)
	assert.Equal(t, "one\n", first.Output, "the first line, before the command ends")
	assert.Nil(t, first.ExitCode)
	require.NoError(t, sb.Write(ctx, "go", nil))
	rest, err := recvAll(sr)
	require.NoError(t, err)
	require.NotEmpty(t, rest)
	assert.Equal(t, "é\n", joined(rest))
	last := rest[len(rest)-1]
	require.NotNil(t, last.ExitCode)
	assert.Equal(t, 5, *last.ExitCode)
	assert.False(t, last.Truncated)
	for _, c := range rest[:len(rest)-1] {
		assert.Nil(t, c.ExitCode, "only the last chunk has the exit code")
	}
}

// TestExecuteStreamingSameAsExecute: the stream joined is Execute's output,
// with the same cap (the sandbox's max output bytes) and timeout line.
func TestExecuteStreamingSameAsExecute(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.New(t, testenv.BusyboxImage, sandbox.WithNetworkMode("none"), sandbox.WithMaxOutputBytes(1000))
	require.Equal(t, 1000, sb.MaxOutputBytes())
	b := sandboxeino.NewBackend(sb, sandboxeino.WithExecOptions(sandbox.ExecTimeout(time.Second)))
	for _, cmd := range []string{
		`i=0; while [ $i -lt 300 ]; do echo "line $i é"; i=$((i+1)); done`, // 4 KB, cut in an é
		`echo partial; printf 'no newline'; sleep 30`,                      // timed out
		`printf '\377\376 bad \377'; echo; exit 2`,                         // invalid UTF-8
		`true`,
	} {
		want, err := b.Execute(ctx, &filesystem.ExecuteRequest{Command: cmd})
		require.NoError(t, err, cmd)
		sr, err := b.ExecuteStreaming(ctx, &filesystem.ExecuteRequest{Command: cmd})
		require.NoError(t, err, cmd)
		chunks, err := recvAll(sr)
		require.NoError(t, err, cmd)
		require.NotEmpty(t, chunks, cmd)
		last := chunks[len(chunks)-1]
		assert.Equal(t, want.Output, joined(chunks), cmd)
		assert.Equal(t, *want.ExitCode, *last.ExitCode, cmd)
		assert.Equal(t, want.Truncated, last.Truncated, cmd)
	}
	r, err := b.Execute(ctx, &filesystem.ExecuteRequest{Command: `echo partial; printf 'no newline'; sleep 30`})
	require.NoError(t, err)
	assert.Equal(t, "partial\nno newline\nError: Command timed out after 1 seconds.", r.Output)
	assert.Equal(t, 124, *r.ExitCode)
	r, err = b.Execute(ctx, &filesystem.ExecuteRequest{Command: `i=0; while [ $i -lt 300 ]; do echo "line $i é"; i=$((i+1)); done`})
	require.NoError(t, err)
	assert.True(t, r.Truncated)
	assert.True(t, strings.HasSuffix(r.Output, "\n\n... Output truncated at 1000 bytes."), r.Output)

	_, err = b.ExecuteStreaming(ctx, &filesystem.ExecuteRequest{})
	assert.ErrorIs(t, err, sandbox.ErrEmptyCommand)
	_, err = b.ExecuteStreaming(ctx, nil)
	assert.Error(t, err)
}

// survivors counts the processes in the sandbox whose command line has
// marker (the counting shell's own line is left out).
func survivors(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, marker string) string {
	t.Helper()
	r, err := sb.Execute(ctx, `for p in /proc/[0-9]*; do [ "$p" = /proc/$$ ] || tr '\0' ' ' 2>/dev/null < $p/cmdline; echo; done | grep -c "`+marker+`"`)
	require.NoError(t, err)
	return strings.TrimSpace(r.Output)
}

// TestExecuteStreamingKill: ending the context, or closing the reader,
// kills the command's whole tree (a background child included) promptly.
func TestExecuteStreamingKill(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	b := sandboxeino.NewBackend(sb)
	for _, how := range []string{"cancel", "close"} {
		cctx, cancel := context.WithCancel(ctx)
		sr, err := b.ExecuteStreaming(cctx, &filesystem.ExecuteRequest{Command: `sleep 301 & echo started; sleep 302`})
		require.NoError(t, err)
		c, err := sr.Recv()
		for err == nil && c.Output == "" {
			c, err = sr.Recv()
		}
		require.NoError(t, err)
		require.Equal(t, "started\n", c.Output)
		require.Equal(t, "2", survivors(t, ctx, sb, "sleep 30[12]"), "both sleeps run")
		start := time.Now()
		if how == "cancel" {
			cancel()
			_, err = recvAll(sr)
			assert.ErrorIs(t, err, context.Canceled)
		} else {
			sr.Close()
		}
		require.Eventually(t, func() bool { return survivors(t, ctx, sb, "sleep 30[12]") == "0" }, 10*time.Second, 50*time.Millisecond, how)
		assert.Less(t, time.Since(start), 10*time.Second, how)
		cancel()
	}
}

// TestExecuteBackground: the command runs on after the call, its output in
// a file; Stop kills its tree.
func TestExecuteBackground(t *testing.T) {
	ctx := sandboxtest.Context(t)
	sb := sandboxtest.Busybox(t)
	b := sandboxeino.NewBackend(sb)
	callCtx, cancel := context.WithCancel(ctx)
	bc, err := b.ExecuteBackground(callCtx, &filesystem.ExecuteRequest{Command: `echo start; while [ ! -e go ]; do sleep 0.1; done; echo end >&2; exit 7`})
	require.NoError(t, err)
	cancel() // the call's context does not stop it
	assert.True(t, strings.HasPrefix(bc.LogPath, "/tmp/sandboxeino/"), bc.LogPath)
	require.Eventually(t, func() bool {
		s, err := b.Read(ctx, &filesystem.ReadRequest{FilePath: bc.LogPath})
		return err == nil && s == "     1\tstart"
	}, 10*time.Second, 50*time.Millisecond)
	select {
	case <-bc.Done():
		t.Fatal("ended before it was let")
	default:
	}
	require.NoError(t, sb.Write(ctx, "go", nil))
	r, err := bc.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 7, *r.ExitCode)
	s, err := b.Read(ctx, &filesystem.ReadRequest{FilePath: bc.LogPath})
	require.NoError(t, err)
	assert.Equal(t, "     1\tstart\n     2\tend", s)

	bc, err = b.ExecuteBackground(ctx, &filesystem.ExecuteRequest{Command: `sleep 303 & sleep 304`})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return survivors(t, ctx, sb, "sleep 30[34]") == "2" }, 10*time.Second, 50*time.Millisecond)
	bc.Stop()
	_, err = bc.Wait(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "0", survivors(t, ctx, sb, "sleep 30[34]"))

	_, err = b.ExecuteBackground(ctx, &filesystem.ExecuteRequest{})
	assert.ErrorIs(t, err, sandbox.ErrEmptyCommand)
}
