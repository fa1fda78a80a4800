package integration

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sandboxDetachForm is a way for a command to start a process that leaves
// it; cmd starts "sleep %d" (the marker) and needs the program needs.
type sandboxDetachForm struct {
	name, cmd, needs string
}

var sandboxDetachForms = []sandboxDetachForm{
	{"background", "sleep %d &", ""},
	{"orphan", "(sleep %d &)", ""},
	{"double fork", "( (sleep %d &) & )", ""},
	{"setsid", "setsid sleep %d &", ""},
	{"orphan setsid", "(setsid sleep %d &)", ""},
	{"setsid sh", "setsid sh -c 'sleep %d & sleep 1 &' &", ""},
	{"double fork setsid", "(setsid sh -c '(sleep %d &)' &)", ""},
	{"process group", "(set -m; sleep %d &)", ""},
	{"daemon", "start-stop-daemon -S -b -p /nonexistent -a /bin/sleep -- %d", "start-stop-daemon"},
	{"setsid -f", "setsid -f sleep %d", "setsid -f"},
	{"nohup", "(nohup sleep %d >/dev/null 2>&1 &)", "nohup"},
	{"disown", "bash -c 'sleep %d & disown'", "bash"},
}

// detachCommand returns a command that detaches a sleep by each form the
// sandbox supports, and the form of each marker (the sleep's argument).
func detachCommand(t *testing.T, sb *sandbox.Sandbox, base int) (string, map[int]string) {
	t.Helper()
	has := mustSh(t, sb, "for p in start-stop-daemon nohup bash; do command -v $p >/dev/null && echo $p; done; setsid -f true 2>/dev/null && echo 'setsid -f'; true")
	var lines []string
	forms := map[int]string{}
	for i, f := range sandboxDetachForms {
		if f.needs != "" && !strings.Contains("\n"+has+"\n", "\n"+f.needs+"\n") {
			continue
		}
		m := base + i
		forms[m] = f.name
		lines = append(lines, fmt.Sprintf(f.cmd, m))
	}
	return strings.Join(lines, "\n"), forms
}

// liveSleeps returns the forms whose marker names a live process of the
// sandbox ("sleep <marker>"); a failed look is reported as the form "?"
// (it runs in Eventually's goroutine, where a test may not stop).
func liveSleeps(t *testing.T, sb *sandbox.Sandbox, forms map[int]string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := sb.Execute(ctx, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done 2>/dev/null`)
	if err != nil {
		return []string{"? " + err.Error()}
	}
	var live []string
	for _, line := range strings.Split(res.Output, "\n") {
		args := strings.Fields(line)
		if len(args) != 2 || (args[0] != "sleep" && args[0] != "/bin/sleep") {
			continue
		}
		if m, err := strconv.Atoi(args[1]); err == nil && forms[m] != "" {
			live = append(live, forms[m])
		}
	}
	return live
}

// Every process a command starts, however it detaches (orphaned, new
// session, new process group, daemonized), is killed when the command
// times out or its context is cancelled, on the shared channel and on an
// exec of its own; a command that ends on its own leaves them running.
func TestDetachedProcessesDie(t *testing.T) {
	skipInShortOnDocker(t)
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
				for i, end := range []string{"timeout", "cancel", "success"} {
					t.Run(end, func(t *testing.T) {
						if end == "success" && sandboxtest.GVisor() {
							t.Skip("under gVisor a background process that exits as its command's reaper exits can end the sandbox (docs/engines.md)")
						}
						cmd, forms := detachCommand(t, sb, 7000+100*i)
						require.NotEmpty(t, forms)
						ctx, cancel := context.WithCancel(testCtx(t))
						defer cancel()
						var opts []sandbox.ExecOption
						timeout := 20 * time.Second // room for a loaded machine
						if sandboxtest.GVisor() {
							timeout = 40 * time.Second // and for gVisor's slower process starts
						}
						switch end {
						case "timeout":
							opts = append(opts, sandbox.ExecTimeout(timeout))
						case "cancel":
							opts = append(opts, sandbox.ExecTimeout(0))
						}
						if end != "success" {
							cmd += "\nsleep 7999"
						}
						type result struct {
							res sandbox.ExecuteResponse
							err error
						}
						done := make(chan result, 1)
						start := time.Now()
						go func() {
							res, err := sb.Execute(ctx, cmd, opts...)
							done <- result{res, err}
						}()
						var live []string
						if !assert.Eventually(t, func() bool { live = liveSleeps(t, sb, forms); return len(live) == len(forms) }, timeout-2*time.Second, 100*time.Millisecond) {
							t.Fatalf("the command did not start a process of each form: live %q of %q", live, mapValues(forms))
						}
						require.ElementsMatch(t, mapValues(forms), live)
						if end == "cancel" {
							cancel()
						}
						var r result
						select {
						case r = <-done:
						case <-time.After(timeout + 20*time.Second):
							t.Fatal("Execute did not return")
						}
						t.Logf("after %v: exit %d, timed out %v, error %v", time.Since(start).Round(time.Millisecond), r.res.ExitCode, r.res.TimedOut, r.err)
						switch end {
						case "success":
							require.NoError(t, r.err)
							assert.Equal(t, 0, r.res.ExitCode)
							time.Sleep(200 * time.Millisecond)
							assert.ElementsMatch(t, mapValues(forms), liveSleeps(t, sb, forms), "a finished command's background processes were killed")
							return
						case "timeout":
							require.NoError(t, r.err)
							assert.True(t, r.res.TimedOut)
							assert.Less(t, time.Since(start), timeout+10*time.Second)
						case "cancel":
							assert.ErrorIs(t, r.err, context.Canceled)
						}
						// Killing and reaping is asynchronous: allow a moment.
						assert.Eventually(t, func() bool { live = liveSleeps(t, sb, forms); return len(live) == 0 }, 3*time.Second, 100*time.Millisecond)
						assert.Empty(t, live, "processes survived the command's %s", end)
					})
				}
			}, sandbox.WithSharedChannel(shared))
		})
	}
}

func mapValues(m map[int]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// When a command kills its helper, another helper kills the command's
// processes, detached ones included.
func TestLostHelperKillsDetached(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
				cmd, forms := detachCommand(t, sb, 7300)
				// The helper is the parent of the command's reaper ($PPID).
				cmd += "\nsleep 1; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat); sleep 7999"
				_, err := sb.Execute(testCtx(t), cmd, sandbox.ExecTimeout(30*time.Second))
				require.ErrorIs(t, err, sandbox.ErrHelper)
				var live []string
				assert.Eventually(t, func() bool { live = liveSleeps(t, sb, forms); return len(live) == 0 }, 3*time.Second, 100*time.Millisecond)
				assert.Empty(t, live, "processes of a lost helper's command survived")
			}, sandbox.WithSharedChannel(shared))
		})
	}
}

// A command that kills the process between it and its helper (its reaper,
// $PPID) is killed with every process it started; signals that a command
// sends to its whole process group do not reach that far.
func TestCommandKillsItsReaper(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
				ctx := testCtx(t)
				// Only processes that stay below the shell: one orphaned
				// before the kill goes to PID 1 with the reaper gone (a known
				// limit, RELIABILITY.md).
				forms := map[int]string{7501: "background", 7503: "foreground"}
				res, err := sb.Execute(ctx, "sleep 7501 & sleep 0.5; kill -9 $PPID; sleep 7503", sandbox.ExecTimeout(20*time.Second))
				require.NoError(t, err)
				assert.False(t, res.TimedOut)
				assert.Equal(t, 137, res.ExitCode)
				assert.Empty(t, liveSleeps(t, sb, forms))

				res, err = sb.Execute(ctx, "trap '' TERM; kill -TERM 0; kill -INT $PPID; sleep 0.2; kill -0 $PPID && echo alive")
				require.NoError(t, err)
				assert.Equal(t, "alive\n", res.Output)
			}, sandbox.WithSharedChannel(shared))
		})
	}
}

// A missing working directory is named in the error, which matches
// fs.ErrNotExist.
func TestExecDirMissing(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, images[0])
	_, err := sb.Execute(testCtx(t), "pwd", sandbox.ExecDir("/no/such/dir"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "exec directory /no/such/dir")
	_, err = sb.Execute(testCtx(t), "pwd", sandbox.ExecDir("/etc/passwd"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exec directory /etc/passwd")
}
