package helper

import (
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longCommand is a command over the kernel's 128 KiB argument limit: a
// heredoc of n bytes, then what shows the shell's view ($0, $#, fd 3, the
// stdin), then exit 7.
func longCommand(n int) (command, heredoc string) {
	heredoc = strings.Repeat("x", n)
	return "cat <<'EOF'\n" + heredoc + "\nEOF\n" +
		`echo "$0 $#"; if [ -e /dev/fd/3 ]; then echo fd3 open; fi; tr a-z A-Z; exit 7`, heredoc
}

// A command over argvCommandMax runs from a file, as sh -c would run it:
// byte-exact output, $0 and $@ as with sh -c, no
// descriptor left to its processes, stdin the caller's, its exit status.
func TestExecLongCommand(t *testing.T) {
	for _, n := range []int{200 << 10, 4 << 20} {
		command, heredoc := longCommand(n)
		w, r, stop := session(t)
		out, res := roundTrip(t, w, r, proto.Request{Op: proto.OpExec, Command: command, Combined: true, Stdin: true}, []byte("shout"))
		stop()
		require.Nil(t, res.Error, "%d bytes", len(command))
		assert.Equal(t, 7, res.ExitCode)
		want := heredoc + "\n" + shell() + " 0\nSHOUT"
		if !assert.Equal(t, len(want), len(out)) {
			t.Logf("tail %q, want %q", out[max(0, len(out)-40):], want[len(want)-40:])
		} else {
			assert.True(t, out == want, "output %q...%q", out[:min(len(out), 40)], out[max(0, len(out)-40):])
		}
	}
}

// The timeout still kills a long command's tree.
func TestExecLongCommandTimeout(t *testing.T) {
	command := "sleep 30 & sleep 30 # " + strings.Repeat("y", argvCommandMax)
	start := time.Now()
	_, res := oneRequest(t, proto.Request{Op: proto.OpExec, Command: command, Timeout: 200})
	assert.True(t, res.TimedOut)
	assert.Less(t, time.Since(start), 10*time.Second)
}

// A long command on a terminal, and as a managed process.
func TestLongCommandTTYAndProcess(t *testing.T) {
	command := "echo $#-ok; exit 4 # " + strings.Repeat("z", 200<<10)
	w, r, stop := session(t)
	defer stop()
	out, res := roundTrip(t, w, r, proto.Request{Op: proto.OpExec, Command: command, TTY: &proto.Winsize{Rows: 24, Cols: 80}}, nil)
	assert.Equal(t, 4, res.ExitCode)
	assert.Contains(t, out, "0-ok")

	tab := newProcTable()
	pres, then := tab.start(proto.Request{Op: proto.OpProcStart, Command: command, Proc: &proto.ProcRequest{}})
	require.Nil(t, pres.Error)
	p, _ := tab.lookup(proto.Request{Proc: &proto.ProcRequest{ID: pres.Proc.Info.ID}})
	then()
	reapUntil(t, tab, pres.Proc.Info.Pid)
	info, log := waitDone(t, tab, p)
	assert.Equal(t, 4, info.ExitCode)
	assert.Equal(t, "0-ok\n", log)
	assert.Len(t, info.Command, proto.KeptProcCommand)
}
