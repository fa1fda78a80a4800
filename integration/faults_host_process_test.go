//go:build linux

package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// childEnv makes the test binary, re-run by a test, act as a host process
// that owns a sandbox (see TestHelperProcessSandbox).
const childEnv = "DOCKERSANDBOX_TEST_CHILD"

// TestHelperProcessSandbox is not a test: run by startChild as a child
// process, it creates a sandbox (with an idle timeout, a lifetime or
// neither, as the environment says), prints its ID, starts `sleep 1000` in
// it, prints READY and waits to be killed.
func TestHelperProcessSandbox(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run as a child process by the host-process tests")
	}
	var opts []sandbox.Option
	switch mode {
	case "idle":
		opts = append(opts, sandbox.WithIdleTimeout(2*time.Second))
	case "lifetime":
		opts = append(opts, sandbox.WithLifetime(5*time.Second))
	case "orphan":
		// The prune test removes this run's orphans only: others' belong
		// to tests running beside it on the same daemon.
		opts = append(opts, sandbox.WithLabels(map[string]string{orphanLabel: os.Getenv(orphanRunEnv)}))
	}
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage, opts...)...)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ID", sb.ID())
	startLong(t, sb)
	fmt.Println("READY")
	time.Sleep(time.Hour)
}

// startChild runs TestHelperProcessSandbox in a child process and returns
// its sandbox's ID once `sleep 1000` runs in it. Whatever happens, the
// child is killed and the container removed when the test ends.
func startChild(t *testing.T, mode string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessSandbox$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var id string
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if id != "" {
			_ = removeBox(t, id)
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the child process ended before it was ready:\n%s", stderr.String())
			}
			if v, found := strings.CutPrefix(line, "ID "); found {
				id = v
			}
			if line == "READY" {
				require.NotEmpty(t, id)
				go func() { // drain, so that the child never blocks on its output
					for range lines {
					}
				}()
				return cmd, id
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("the child process did not get ready:\n%s", stderr.String())
		}
	}
}

// killChild kills the child process as a crash would: SIGKILL, no Close.
func killChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

// A host process killed mid-session (SIGKILL: no Close, no deferred
// cleanup) does not leak its sandbox: the dropped connection kills the
// running command, and the helper's idle timeout or lifetime ends the
// container, which Docker then removes; the next New removes the port
// socket directory it left.
func TestHostProcessKilled(t *testing.T) {
	t.Parallel()
	testenv.MustHaveEngine(t)
	for _, mode := range []string{"idle", "lifetime"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd, id := startChild(t, mode)
			require.True(t, running(t, id))
			dir := portsDirOf(t, id)
			killChild(t, cmd)
			waitGone(t, id)
			requirePortDirSwept(t, dir)
		})
	}
}
