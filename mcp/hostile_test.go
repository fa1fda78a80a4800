//go:build linux

package sandboxmcp_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A hostile helper cannot hang sandbox-mcp over HTTP (issue 9, item 1):
// root in the container replaces /.dockersandbox/sandbox-helper with
// internal/testenv/hostilehelper in mode "silent" (it never says hello)
// and kills the running shared channel ("sandbox-helper serve"), so that
// the next call must start a new helper. Then, measured from the test:
// a tool call returns a tool error within hostileCallBound, closing the
// session (HTTP DELETE) returns within hostileCloseBound, and SIGTERM
// makes the server exit within hostileExitBound with its sandbox removed;
// also with the SIGTERM arriving while a tool call waits on the helper.
const (
	hostileCallBound  = 30 * time.Second // a file operation without a deadline: 20 s in the library
	hostileCloseBound = 40 * time.Second
	hostileExitBound  = 45 * time.Second
	// hostileOverdue is how long past its bound a call is waited for
	// before the server's goroutines are dumped.
	hostileOverdue = 15 * time.Second
	// hostileDir is the helper's folder in the container.
	hostileDir = "/.dockersandbox"
)

func TestHostileHelperHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandboxes whose helper never answers; takes up to a minute")
	}
	bin := buildCommand(t)
	helper, err := os.ReadFile(testenv.BuildTool(t, "..", "internal/testenv/hostilehelper"))
	require.NoError(t, err)

	// Both at once, to keep the test's time to that of the longer one.
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		s, cs, id := hostileSession(t, bin, helper)

		// (1) A tool call that must start a new helper fails in time.
		ctx, cancel := context.WithTimeout(context.Background(), hostileCallBound+hostileOverdue)
		defer cancel()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"file_path": "/etc/hostname"}})
		took := time.Since(start)
		if err != nil && ctx.Err() != nil {
			s.dump(t, "read_file: no answer within "+took.Round(time.Millisecond).String())
		}
		require.NoError(t, err, "read_file: a protocol error, not a tool error")
		t.Logf("read_file: %v: isError=%v %s", took.Round(time.Millisecond), res.IsError, mustJSON(res.Content))
		assert.True(t, res.IsError, "read_file through a silent helper is a tool error: %s", mustJSON(res))
		assert.LessOrEqual(t, took, hostileCallBound, "read_file: bound")

		// (2) Closing the session (HTTP DELETE) returns in time.
		start = time.Now()
		closed := make(chan error, 1)
		go func() { closed <- cs.Close() }()
		select {
		case err := <-closed:
			took = time.Since(start)
			t.Logf("session Close: %v: %v", took.Round(time.Millisecond), err)
			assert.LessOrEqual(t, took, hostileCloseBound, "session Close: bound")
		case <-time.After(hostileCloseBound + hostileOverdue):
			s.dump(t, "session Close (HTTP DELETE): no return")
		}
		t.Logf("sandbox exists after the session's end: %v", testenv.SandboxExists(t, id))

		// (3) SIGTERM: the server exits in time; the sandbox is gone.
		s.terminate(t)
		assert.False(t, testenv.SandboxExists(t, id), "the sandbox is removed")
	})

	t.Run("SIGTERM with a call in flight", func(t *testing.T) {
		t.Parallel()
		s, cs, id := hostileSession(t, bin, helper)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		type answer struct {
			res *mcp.CallToolResult
			err error
		}
		answered := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{"path": "/"}})
			answered <- answer{res, err}
		}()
		time.Sleep(time.Second) // the call waits for the new helper's hello
		select {
		case a := <-answered:
			t.Fatalf("the call returned before SIGTERM: %v %s", a.err, mustJSON(a.res))
		default:
		}

		s.terminate(t)
		assert.False(t, testenv.SandboxExists(t, id), "the sandbox is removed")
		select {
		case a := <-answered:
			t.Logf("the call in flight: %v %s", a.err, mustJSON(a.res))
			if a.err == nil {
				assert.True(t, a.res.IsError, "the call in flight fails: %s", mustJSON(a.res))
			}
		case <-time.After(10 * time.Second):
			t.Error("the call in flight did not return after the server exited")
		}
	})
}

// hostileSession starts the command over HTTP, opens a session, makes its
// sandbox (a first call, then one on the shared channel), installs the
// hostile helper in mode "silent" and kills the shared channel's helper. It
// returns the server, the session and the sandbox's ID.
func hostileSession(t *testing.T, bin string, helper []byte) (*hostileServer, *mcp.ClientSession, string) {
	t.Helper()
	label := newLabel(t)
	removeLeftovers(t, label) // after the server's cleanup, which kills it
	s := startHostileServer(t, bin, commandArgs(label)...)
	ctx := sandboxtest.Context(t)
	cs, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() { cs.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Error("the client session did not close")
		}
	})
	assert.Equal(t, "hi\n\n[Command succeeded with exit code 0]", callOK(t, ctx, cs, "execute", map[string]any{"command": "echo hi"}))
	callOK(t, ctx, cs, "ls", map[string]any{"path": "/"})
	ids := containers(t, label)
	require.Len(t, ids, 1)
	id := ids[0]
	require.True(t, testenv.SandboxExists(t, id), "a container of the library")

	cli := testenv.Client(t)
	testenv.CopyFiles(t, cli, id, hostileDir,
		testenv.File{Name: "hostile-new", Content: helper, Mode: 0o755},
		testenv.File{Name: "hostile-mode", Content: []byte("silent"), Mode: 0o755})
	testenv.Exec(t, cli, id, "0", "mv", hostileDir+"/hostile-new", hostileDir+"/sandbox-helper")
	// Busybox has no pkill. The pattern is put together so that the
	// script's own command line does not match it.
	out := testenv.Exec(t, cli, id, "0", "sh", "-c", `p=sandbox-helper; n=0
for d in /proc/[0-9]*; do
	pid=${d#/proc/}
	[ "$pid" = $$ ] && continue
	case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in
	*"$p serve"*) kill -9 $pid && n=$((n+1));;
	esac
done
echo killed $n
[ $n -gt 0 ]`)
	t.Logf("sandbox %s: hostile helper installed (silent); %s", id, regexp.MustCompile(`killed \d+`).FindString(out))
	return s, cs, id
}

// hostileServer is the command with -transport http.
type hostileServer struct {
	cmd    *exec.Cmd
	url    string
	log    *syncBuffer   // its stderr
	exited chan struct{} // closed once it exited and its stderr is read
	err    error         // Wait's, once exited is closed
}

// startHostileServer starts bin on a free loopback port and waits for its
// URL; at the end of the test it is killed if still running.
func startHostileServer(t *testing.T, bin string, args ...string) *hostileServer {
	t.Helper()
	s := &hostileServer{
		cmd:    exec.Command(bin, append(args, "-transport", "http", "-addr", "127.0.0.1:0")...),
		log:    &syncBuffer{},
		exited: make(chan struct{}),
	}
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		re := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/mcp)`)
		for sc.Scan() {
			s.log.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		s.err = s.cmd.Wait() // after the reads, as Wait closes the pipe
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Error("the killed server did not exit")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.log)
		}
	})
	select {
	case s.url = <-urls:
		return s
	case <-s.exited:
		t.Fatalf("the server exited: %v; log:\n%s", s.err, s.log)
	case <-time.After(30 * time.Second):
		t.Fatalf("no URL in the log:\n%s", s.log)
	}
	return nil
}

// terminate sends SIGTERM and requires the server to exit with status 0
// within hostileExitBound.
func (s *hostileServer) terminate(t *testing.T) {
	t.Helper()
	start := time.Now()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.exited:
	case <-time.After(hostileExitBound + hostileOverdue):
		s.dump(t, "no exit after SIGTERM")
	}
	took := time.Since(start)
	t.Logf("exited %v after SIGTERM: %v", took.Round(time.Millisecond), s.err)
	assert.LessOrEqual(t, took, hostileExitBound, "exit after SIGTERM: bound")
	assert.NoError(t, s.err, "exit status; log:\n%s", s.log)
}

// dump fails t with what, after the server's goroutines: SIGQUIT makes
// the Go runtime print them to stderr, and exit.
func (s *hostileServer) dump(t *testing.T, what string) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	t.Fatalf("%s; the server's log and goroutines (SIGQUIT):\n%s", what, s.log)
}
