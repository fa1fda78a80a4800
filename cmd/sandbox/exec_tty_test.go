package main

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tmuxPane is a tmux window on a private server (its socket in the test's
// temporary directory) that runs a command as a person would in a terminal.
type tmuxPane struct {
	t      *testing.T
	socket string
}

// newTmux starts a private tmux server running command in a cols x rows
// window; the test kills it at its end.
func newTmux(t *testing.T, cols, rows int, command string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/docker-up.sh installs it)")
	}
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux-"+strings.ToLower(rand.Text()[:6]))}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	p.tmux("-f", "/dev/null", "new-session", "-d", "-x", itoa(cols), "-y", itoa(rows), command)
	return p
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	require.NoError(p.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// keys types, as send-keys does (key names such as Enter and C-c work).
func (p *tmuxPane) keys(keys ...string) { p.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...) }

// screen is what the pane shows, with its scrollback.
func (p *tmuxPane) screen() string {
	return p.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "0")
}

// until waits for want to show on the screen, at most 30 s.
func (p *tmuxPane) until(want string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if strings.Contains(s, want) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%q did not show within 30 s; the screen:\n%s", want, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exec -it, driven through tmux as a person types: an interactive shell
// (bash on Debian, sh on busybox) that sees the window's size and its
// resize, Ctrl-C interrupting a command, the shell's exit status as the
// CLI's, and the host terminal back in its mode afterwards.
func TestCLIExecTTY(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := filepath.Join(t.TempDir(), "sandbox")
	built, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(built))
	run := func(t *testing.T, stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runBin(t, bin, stdin, args...)
	}
	for _, c := range []struct{ image, shell string }{{testenv.BusyboxImage, "sh"}, {testenv.DebianImage, "bash"}} {
		t.Run(c.shell, func(t *testing.T) {
			out, errOut, code := run(t, "", "create", "-image", c.image, "-pull", "never", "-json")
			require.Equal(t, 0, code, errOut)
			var created struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(out), &created))
			id := created.ID
			t.Cleanup(func() { run(t, "", "rm", id) })

			dir := t.TempDir()
			status, after := filepath.Join(dir, "status"), filepath.Join(dir, "stty")
			p := newTmux(t, 100, 30, "TERM=xterm "+bin+" exec -it "+id+"; echo $? >"+status+"; stty -a >"+after+"; sleep 600")
			p.keys("echo shell-is-$0-$((6*7))", "Enter")
			p.until("shell-is-" + c.shell + "-42")
			p.keys("stty size", "Enter")
			p.until("30 100")
			p.tmux("resize-window", "-t", "0", "-x", "120", "-y", "40")
			// The resize reaches the sandbox's terminal after the window's
			// (SIGWINCH to the CLI, then a frame to the helper): a stty typed
			// at once may run first. Ask until it shows; a resize lost for
			// good still fails.
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.screen(), "40 120"); {
				if time.Now().After(deadline) {
					t.Fatalf("the resize did not reach the sandbox within 30 s; the screen:\n%s", p.screen())
				}
				p.keys("stty size", "Enter")
				time.Sleep(time.Second)
			}

			start := time.Now()
			p.keys("sleep 30; echo not-$((1+1))-interrupted", "Enter")
			time.Sleep(500 * time.Millisecond)
			p.keys("C-c")
			p.keys("echo after-$((6*7))", "Enter")
			p.until("after-42")
			assert.Less(t, time.Since(start), 20*time.Second, "Ctrl-C did not interrupt sleep")
			assert.NotContains(t, p.screen(), "not-2-interrupted")

			p.keys("exit 7", "Enter")
			var got []byte
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(after)
				got, _ = os.ReadFile(status)
				return err == nil && len(b) > 0
			}, 30*time.Second, 100*time.Millisecond, "the CLI did not exit; the screen:\n%s", p.screen())
			assert.Equal(t, "7\n", string(got), "the shell's exit status is the CLI's")
			modes, _ := os.ReadFile(after)
			fields := strings.Fields(string(modes))
			assert.Contains(t, fields, "icanon", "the terminal is back in canonical mode: %s", modes)
			assert.Contains(t, fields, "echo", "the terminal echoes again: %s", modes)
		})
	}
}

// notTerminal is what exec -t says without a terminal on stdin.
const notTerminal = "-t needs a terminal on stdin (it is not one); use -i alone to stream input without a terminal"

// exec -t needs a terminal on stdin, and says so; -i alone streams stdin
// without one; a command runs on a terminal with -t and a pipe is refused.
func TestCLIExecTTYErrors(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	out, errOut, code := run(t, "", "create", "-image", testenv.BusyboxImage, "-pull", "never", "-json")
	require.Equal(t, 0, code, errOut)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	id := created.ID
	t.Cleanup(func() { run(t, "", "rm", id) })

	for _, args := range [][]string{{"exec", "-it", id}, {"exec", "-t", id, "--", "true"}, {"exec", "-ti", id}} {
		out, errOut, code = run(t, "", args...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Empty(t, out)
		assert.Equal(t, "sandbox exec: "+notTerminal+"\n", errOut, "%v", args)
	}
	out, errOut, code = run(t, "hello\nworld\n", "exec", "-i", id, "--", "cat; [ -t 0 ] || echo no-tty")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "hello\nworld\nno-tty\n", out)
	_, errOut, code = run(t, "", "exec", "-i", id)
	assert.Equal(t, 2, code, "-i without -t needs a command: %s", errOut)
}

// exec -it restores the host terminal on the other ways out too: SIGTERM
// to the CLI (the command is killed, status 1) and the sandbox removed
// from outside during the session (status 1, the error said once).
func TestCLIExecTTYRestores(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := filepath.Join(t.TempDir(), "sandbox")
	built, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(built))
	run := func(t *testing.T, stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runBin(t, bin, stdin, args...)
	}
	for _, way := range []string{"sigterm", "removed"} {
		t.Run(way, func(t *testing.T) {
			out, errOut, code := run(t, "", "create", "-image", testenv.BusyboxImage, "-pull", "never", "-json")
			require.Equal(t, 0, code, errOut)
			var created struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(out), &created))
			id := created.ID
			t.Cleanup(func() { run(t, "", "rm", id) })

			dir := t.TempDir()
			pidFile, status, after := filepath.Join(dir, "pid"), filepath.Join(dir, "status"), filepath.Join(dir, "stty")
			p := newTmux(t, 100, 30, "sh -c 'echo $$ >"+pidFile+"; exec "+bin+" exec -it "+id+"'; echo $? >"+status+"; stty -a >"+after+"; sleep 600")
			p.keys("echo ready-$((6*7))", "Enter")
			p.until("ready-42")
			switch way {
			case "sigterm":
				b, err := os.ReadFile(pidFile)
				require.NoError(t, err)
				var pid int
				require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(string(b))), &pid))
				require.NoError(t, syscallKill(pid))
			case "removed":
				_, errOut, code := run(t, "", "rm", id)
				require.Equal(t, 0, code, errOut)
			}
			var got []byte
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(after)
				got, _ = os.ReadFile(status)
				return err == nil && len(b) > 0
			}, 60*time.Second, 100*time.Millisecond, "the CLI did not exit; the screen:\n%s", p.screen())
			assert.Equal(t, "1\n", string(got), "the CLI's status; the screen:\n%s", p.screen())
			fields := strings.Fields(readFile(t, after))
			assert.Contains(t, fields, "icanon", "the terminal is back in canonical mode")
			assert.Contains(t, fields, "echo", "the terminal echoes again")
			assert.Equal(t, 1, strings.Count(p.screen(), "sandbox exec: "), "the error, once:\n%s", p.screen())
		})
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// syscallKill sends SIGTERM to pid.
func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(syscall.SIGTERM)
}

// exec -t alone runs the command on a terminal of the window's size
// without passing keys: the command sees a terminal, its status passes
// through.
func TestCLIExecTTYNoInput(t *testing.T) {
	testenv.MustHaveEngine(t)
	bin := filepath.Join(t.TempDir(), "sandbox")
	built, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(built))
	out, errOut, code := runBin(t, bin, "", "create", "-image", testenv.BusyboxImage, "-pull", "never", "-json")
	require.Equal(t, 0, code, errOut)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &created))
	t.Cleanup(func() { runBin(t, bin, "", "rm", created.ID) })
	status := filepath.Join(t.TempDir(), "status")
	p := newTmux(t, 90, 25, bin+" exec -t "+created.ID+" -- '[ -t 0 ] && echo size-$(stty size | tr \" \" x); exit 4'; echo $? >"+status+"; sleep 600")
	p.until("size-25x90")
	require.Eventually(t, func() bool { b, _ := os.ReadFile(status); return len(b) > 0 }, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, "4\n", readFile(t, status))
}
