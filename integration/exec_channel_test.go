package integration

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killServeScript kills every helper serving a channel.
const killServeScript = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline | grep -q '^/.dockersandbox/sandbox-helper serve' && kill -9 ${p#/proc/}; done; true"

// killServe kills the helper serving the shared channel, from outside.
func killServe(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	if testenv.Relayed() {
		testenv.Exec(t, nil, sb.ID(), "", "sh", "-c", killServeScript)
		return
	}
	cli := testenv.Client(t)
	ctx := testCtx(t)
	ex, err := cli.ExecCreate(ctx, sb.ID(), client.ExecCreateOptions{
		AttachStdout: true, AttachStderr: true, // Podman requires a stream
		Cmd: []string{"sh", "-c", killServeScript},
	})
	require.NoError(t, err)
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	require.NoError(t, err)
	defer att.Close()
	_, err = io.Copy(io.Discard, att.Reader)
	require.NoError(t, err)
}

func TestChannelBreakFallsBack(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	require.NoError(t, sb.Write(ctx, "f.txt", []byte("one")))

	// A command in flight when the channel breaks fails clearly, and its
	// tree is killed all the same (by another helper).
	done := make(chan error, 1)
	go func() {
		_, err := sb.Execute(ctx, "sleep 4321 & sleep 4322")
		done <- err
	}()
	require.Eventually(t, func() bool { return contains(processes(t, sb), "sleep 4322") }, 10*time.Second, 20*time.Millisecond)
	killServe(t, sb)
	err := <-done
	assert.ErrorIs(t, err, sandbox.ErrHelper)
	ps := processes(t, sb)
	assert.NotContains(t, ps, "sleep 4321")
	assert.NotContains(t, ps, "sleep 4322")

	// Later calls work: a new channel, or their own execs meanwhile.
	for range 3 {
		page, err := sb.Read(ctx, "f.txt")
		require.NoError(t, err)
		assert.Equal(t, "one", page.Content)
		resp, err := sb.Execute(ctx, "echo still here")
		require.NoError(t, err)
		assert.Equal(t, "still here\n", resp.Output)
		killServe(t, sb)
	}
}

// A command that kills or stops the helper serving it (its parent) cannot
// escape its call: the library kills its tree through another helper.
func TestCommandTurnsOnItsHelper(t *testing.T) {
	skipInShort(t)
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithSharedChannel(shared))
			ctx := testCtx(t)

			// The helper is the parent of the command's reaper ($PPID).
			_, err := sb.Execute(ctx, "helper=$(cut -d' ' -f4 /proc/$PPID/stat); kill -9 $helper; sleep 4331 & sleep 4332")
			assert.ErrorIs(t, err, sandbox.ErrHelper)
			ps := processes(t, sb)
			assert.NotContains(t, ps, "sleep 4331")
			assert.NotContains(t, ps, "sleep 4332")

			// A stopped helper misses the timeout: the library enforces it.
			resp, err := sb.Execute(ctx, "helper=$(cut -d' ' -f4 /proc/$PPID/stat); kill -STOP $helper; echo stopped; sleep 4341 & sleep 4342", sandbox.ExecTimeout(time.Second))
			require.NoError(t, err)
			assert.True(t, resp.TimedOut)
			assert.Equal(t, 124, resp.ExitCode)
			assert.Contains(t, resp.Output, "Command timed out after 1 seconds")
			ps = processes(t, sb)
			assert.NotContains(t, ps, "sleep 4341")
			assert.NotContains(t, ps, "sleep 4342")

			// Stopped with no timeout: the helper falls silent (with a
			// request running it says it is alive every second); the shared
			// channel is checked and dropped, an exec of its own given up;
			// the call fails, the tree is killed.
			_, err = sb.Execute(ctx, "helper=$(cut -d' ' -f4 /proc/$PPID/stat); kill -STOP $helper; sleep 4351 & sleep 4352", sandbox.ExecTimeout(0))
			assert.ErrorIs(t, err, sandbox.ErrHelper)
			ps = processes(t, sb)
			assert.NotContains(t, ps, "sleep 4351")
			assert.NotContains(t, ps, "sleep 4352")

			// The sandbox goes on working.
			require.NoError(t, sb.Write(ctx, "f.txt", []byte("after")))
			page, err := sb.Read(ctx, "f.txt")
			require.NoError(t, err)
			assert.Equal(t, "after", page.Content)
		})
	}
}

func TestWithoutSharedChannel(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithSharedChannel(false))
	ctx := testCtx(t)
	require.NoError(t, sb.Write(ctx, "f.txt", []byte("per exec")))
	page, err := sb.Read(ctx, "f.txt")
	require.NoError(t, err)
	assert.Equal(t, "per exec", page.Content)
	assert.NotContains(t, processes(t, sb), "sandbox-helper serve")
}

func TestProtocolVersionMismatch(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithSharedChannel(false))
	ctx := testCtx(t)
	// Replace the helper (PID 1 keeps running the old binary) by a script
	// that announces another protocol version.
	hello := `{"version":99}`
	script := fmt.Sprintf("#!/bin/sh\nprintf 'H\\000\\000\\000\\000\\000\\000\\000\\%03o%s'\nsleep 1\n", len(hello), hello)
	c := sb.Command(ctx, "cat > /tmp/h && chmod 755 /tmp/h && mv /tmp/h /.dockersandbox/sandbox-helper")
	c.Stdin = stringsReader(script)
	if secure {
		requireExecAs(t)
		// The profile's user cannot touch the helper; root (without
		// capabilities) owns it.
		res, err := sb.Execute(ctx, "touch /.dockersandbox/sandbox-helper")
		require.NoError(t, err)
		require.NotEqual(t, 0, res.ExitCode, "the sandbox user replaced the helper: %s", res.Output)
		c.User = "0"
	}
	require.NoError(t, c.Run())

	_, err := sb.Execute(ctx, "true")
	assert.ErrorIs(t, err, sandbox.ErrProtocolVersion)
	assert.ErrorIs(t, err, sandbox.ErrHelper)
	assert.Contains(t, err.Error(), "version 99")
}

func TestManyConcurrentExecutes(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := sb.Execute(ctx, fmt.Sprintf("echo %d", i))
			if err == nil && resp.Output != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("%d: got %q", i, resp.Output)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestFiftySandboxes(t *testing.T) {
	t.Parallel()
	testenv.MustHaveEngine(t)
	if testing.Short() {
		t.Skip("creates 50 containers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sbs := make([]*sandbox.Sandbox, 50)
	errs := make([]error, 50)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sbs[i], errs[i] = sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage)...)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, sb := range sbs {
			if sb != nil {
				assert.NoError(t, sb.Close())
			}
		}
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	for i, sb := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := sb.Execute(ctx, fmt.Sprintf("echo %d > /tmp/n; cat /tmp/n", i))
			if err == nil && resp.Output != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("sandbox %d: got %q", i, resp.Output)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}
