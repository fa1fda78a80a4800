//go:build linux

package integration

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// Follow does not skip output silently: when the log wrapped before it
// read, it still writes what the log held, goes on to the end, and returns
// an *OutputDroppedError that counts exactly the bytes skipped (what it
// wrote plus what it dropped is all the process printed).
func TestFollowReportsDroppedOutput(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	sb := newSandbox(t, testenv.BusyboxImage)
	const total = 100_000 + len("END\n")
	p, err := sb.StartProcess(ctx, `head -c 100000 /dev/zero | tr '\0' x; echo END`, sandbox.ProcessLogSize(4096))
	require.NoError(t, err)
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	var out bytes.Buffer
	next, err := p.Follow(ctx, 0, &out)
	require.ErrorIs(t, err, sandbox.ErrOutputDropped)
	var de *sandbox.OutputDroppedError
	require.True(t, errors.As(err, &de), "%v", err)
	require.EqualValues(t, total, next)
	require.EqualValues(t, 0, de.First)
	require.EqualValues(t, total, de.Dropped+int64(out.Len()), "written %d + dropped %d", out.Len(), de.Dropped)
	require.LessOrEqual(t, out.Len(), 4096)
	require.True(t, strings.HasSuffix(out.String(), "xxxEND\n"), "%q", out.String()[max(0, out.Len()-20):])
	// From the end of what the log holds: nothing dropped, no error.
	out.Reset()
	_, err = p.Follow(ctx, int64(total-10), &out)
	require.NoError(t, err)
	require.Equal(t, "xxxxxxEND\n", out.String())
}
