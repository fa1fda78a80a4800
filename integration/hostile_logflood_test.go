package integration

import (
	"os"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Root in the sandbox writes 100 MB into PID 1's standard output and
// error (/proc/1/fd/1, /proc/1/fd/2), which the engine's default log
// driver would keep on the host's disk without bound (50 MB written made a
// 300 MB json-file log): the engine keeps none of it (log driver "none"),
// the writes end, and the sandbox goes on.
func TestLogFloodKeptNowhere(t *testing.T) {
	t.Parallel()
	cli := testenv.Client(t) // the container's log settings, behind the library's back
	sb := newSandbox(t, testenv.BusyboxImage)
	start := time.Now()
	res, err := sb.Execute(testCtx(t), "head -c 50000000 /dev/zero > /proc/1/fd/1; a=$?; head -c 50000000 /dev/zero > /proc/1/fd/2; echo $a $?",
		sandbox.ExecTimeout(time.Minute))
	require.NoError(t, err)
	t.Logf("the flood took %v: %q", time.Since(start), res.Output)
	assert.Equal(t, "0 0\n", res.Output, "the writes ended (nothing blocks PID 1's output)")

	info, err := cli.ContainerInspect(testCtx(t), sb.ID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, "none", info.Container.HostConfig.LogConfig.Type)
	if p := info.Container.LogPath; p != "" {
		if fi, err := os.Stat(p); err == nil {
			assert.Less(t, fi.Size(), int64(1<<20), "the engine's log of the sandbox, %s", p)
		}
	}
	assert.Equal(t, "still here", mustSh(t, sb, "echo still here"))
}
