package integration

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/require"
)

// TestProcessTTY: a process on a terminal sees its size and a resize, and
// a REPL (python3 on Debian, sh on busybox) answers typed input and ends
// on Ctrl-D (CloseStdin).
func TestProcessTTY(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		t.Run("resize", func(t *testing.T) {
			p, err := sb.StartProcess(ctx, `stty size; read x; stty size; echo "done-$x"`, sandbox.ProcessTTY(24, 80))
			require.NoError(t, err)
			info, err := p.Info(ctx)
			require.NoError(t, err)
			require.True(t, info.TTY)
			readUntil(t, p, "24 80", 10*time.Second)
			require.NoError(t, p.Resize(ctx, 30, 100))
			_, err = p.Write(ctx, []byte("go\n"))
			require.NoError(t, err)
			readUntil(t, p, "30 100", 10*time.Second)
			readUntil(t, p, "done-go", 10*time.Second)
			info, err = p.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, 0, info.ExitCode)
			require.ErrorIs(t, p.Resize(ctx, 10, 10), sandbox.ErrProcessDone)
		})
		t.Run("repl", func(t *testing.T) {
			p, err := sb.StartProcess(ctx, `if command -v python3 >/dev/null; then exec python3 -q; else exec sh -i; fi`, sandbox.ProcessTTY(24, 80))
			require.NoError(t, err)
			_, err = p.Write(ctx, []byte("print(6*7) if True else 0\n"))
			require.NoError(t, err)
			// sh -i reads the line as a command that fails; send one it knows.
			_, err = p.Write(ctx, []byte("echo $((6*7))\n"))
			require.NoError(t, err)
			readUntil(t, p, "42\r\n", 10*time.Second)
			require.NoError(t, p.CloseStdin(ctx))
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			info, err := p.Wait(wctx)
			if err != nil { // python3 reads the second line first: Ctrl-D once more
				require.NoError(t, p.CloseStdin(ctx))
				info, err = p.Wait(ctx)
			}
			require.NoError(t, err)
			require.False(t, info.Running())
		})
	})
}
