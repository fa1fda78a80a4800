//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attach finds a running sandbox by ID or name: the same container, files
// and working directory (also under the secure profile, whose working dir
// is a mount Docker knows nothing of); its Close removes the container.
func TestAttach(t *testing.T) {
	t.Parallel()
	for _, profile := range []struct {
		name string
		opts []sandbox.Option
	}{
		{"default", nil},
		{"secure", []sandbox.Option{sandbox.WithSecureProfile()}},
	} {
		t.Run(profile.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			name := fmt.Sprintf("sandbox-attach-%s-%d", profile.name, time.Now().UnixNano())
			sb := newSandbox(t, testenv.BusyboxImage, append(profile.opts,
				sandbox.WithName(name), sandbox.WithWorkingDir("/home/sandbox/project"))...)
			require.NoError(t, sb.Write(ctx, "notes.txt", []byte("from the creator")))
			wantUser := mustSh(t, sb, "id -u")

			for _, ref := range []string{sb.ID(), name} {
				a, err := sandbox.Attach(ctx, ref, onEngine()...)
				require.NoError(t, err, ref)
				assert.Equal(t, sb.ID(), a.ID())
				assert.Equal(t, "/home/sandbox/project", a.WorkingDir())
				page, err := a.Read(ctx, "notes.txt")
				require.NoError(t, err)
				assert.Equal(t, "from the creator", page.Content)
				res, err := a.Execute(ctx, "pwd; id -u")
				require.NoError(t, err)
				assert.Equal(t, "/home/sandbox/project\n"+wantUser+"\n", res.Output)
				require.NoError(t, a.Write(ctx, "reply.txt", []byte("from "+ref)))
				page, err = sb.Read(ctx, "reply.txt")
				require.NoError(t, err)
				assert.Equal(t, "from "+ref, page.Content)
			}

			a, err := sandbox.Attach(ctx, name, onEngine()...)
			require.NoError(t, err)
			require.NoError(t, a.Close())
			_, err = inspectBox(t, sb.ID())
			assert.ErrorIs(t, err, engine.ErrNotFound, "Close of an attached sandbox removes the container")
			_, err = sb.Execute(ctx, "true")
			assert.ErrorIs(t, err, sandbox.ErrGone)
		})
	}
}

func TestAttachRefused(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// No such container.
	_, err := sandbox.Attach(ctx, "dockersandbox-no-such-container", onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrGone)
	if testenv.Relayed() {
		t.Skip("the rest is Docker's: a container made without the library, and one killed from outside (a pod's PID 1 cannot be killed through the engine)")
	}
	cli := testenv.Client(t)

	// Not a sandbox: a container without the library's label.
	plain, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testenv.BusyboxImage, Cmd: []string{"sleep", "1000"}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), plain.ID, client.ContainerRemoveOptions{Force: true})
	})
	_, err = sandbox.Attach(ctx, plain.ID, onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)

	// A sandbox that is not running.
	sb := newSandbox(t, testenv.BusyboxImage)
	_, err = cli.ContainerKill(ctx, sb.ID(), client.ContainerKillOptions{Signal: "KILL"})
	require.NoError(t, err)
	_, err = sandbox.Attach(ctx, sb.ID(), onEngine()...)
	assert.ErrorIs(t, err, sandbox.ErrGone)
}

// TestAttachPausedClose: a handle from Attach takes the sandbox's OCI
// runtime from the engine, so its Close of a paused sandbox ends it
// within Close's bound on every runtime, and under gVisor thaws it first,
// as one from New WithRuntime("runsc") does (the engine's events say so):
// runsc holds a kill of a frozen sandbox (about 10 s here; dockerd has
// stopped answering for a minute under load).
func TestAttachPausedClose(t *testing.T) {
	t.Parallel()
	requirePauser(t)
	ctx := testCtx(t)
	sb, err := sandbox.New(ctx, sandboxOptions(testenv.BusyboxImage)...)
	require.NoError(t, err)
	id := sb.ID()
	t.Cleanup(func() { _ = removeBox(t, id) }) // gone already unless the test failed
	info, err := inspectBox(t, id)
	require.NoError(t, err)
	require.NoError(t, sb.Pause(ctx))
	sb.Detach()
	attached := time.Now()
	again, err := sandbox.Attach(ctx, id, onEngine()...)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, again.Close())
	took := time.Since(start)
	t.Logf("Close of an attached paused sandbox: %v", took)
	assert.Less(t, took, 30*time.Second)
	_, err = inspectBox(t, id)
	assert.ErrorIs(t, err, engine.ErrNotFound, "Close removed the container")
	if sandboxtest.GVisor() {
		assert.Contains(t, containerActions(t, info.ID, attached), "unpause", "Close thawed the gVisor sandbox before its removal")
	}
}

// containerActions returns the actions of Docker's events for the
// container id from since until now.
func containerActions(t *testing.T, id string, since time.Time) []string {
	t.Helper()
	var actions []string
	for _, m := range containerEvents(t, id, since) {
		actions = append(actions, string(m.Action))
	}
	return actions
}

// containerHistory describes the engine's events for the container id
// from since until now, one per line with its time and the attributes
// that say why (an exit code, a signal): what a test logs when a
// container it expected is gone.
func containerHistory(t *testing.T, id string, since time.Time) string {
	t.Helper()
	var b strings.Builder
	for _, m := range containerEvents(t, id, since) {
		fmt.Fprintf(&b, "\n  %s %s", time.Unix(0, m.TimeNano).UTC().Format("15:04:05.000"), m.Action)
		for _, k := range []string{"exitCode", "signal", "execID"} {
			if v, ok := m.Actor.Attributes[k]; ok {
				fmt.Fprintf(&b, " %s=%s", k, v)
			}
		}
	}
	if b.Len() == 0 {
		return " (none)"
	}
	return b.String()
}

// containerEvents returns the engine's events for the container id from
// since until now.
func containerEvents(t *testing.T, id string, since time.Time) []events.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := testenv.Client(t).Events(ctx, client.EventsListOptions{
		Since:   strconv.FormatInt(since.Unix()-1, 10),
		Until:   strconv.FormatInt(time.Now().Unix()+1, 10),
		Filters: make(client.Filters).Add("container", id),
	})
	var msgs []events.Message
	for {
		select {
		case m := <-res.Messages:
			msgs = append(msgs, m)
		case err := <-res.Err:
			if !errors.Is(err, io.EOF) {
				require.NoError(t, err, "the engine's events")
			}
			return msgs
		}
	}
}
