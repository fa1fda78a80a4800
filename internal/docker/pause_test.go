package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/client"
)

// lateFreeze is a daemon whose view of a container stays "paused" for
// stale ExecCreate calls after each pause, as Docker's does when
// containerd's pause event arrives after the Unpause returned.
type lateFreeze struct {
	API
	stale  int // ExecCreate calls still refused
	execs  int // ExecCreate calls
	frozen bool
}

var errAttach = errors.New("attach refused by the fake")

func (f *lateFreeze) ContainerPause(ctx context.Context, id string, o client.ContainerPauseOptions) (client.ContainerPauseResult, error) {
	f.frozen, f.stale = true, 3
	return client.ContainerPauseResult{}, nil
}

func (f *lateFreeze) ContainerUnpause(ctx context.Context, id string, o client.ContainerUnpauseOptions) (client.ContainerUnpauseResult, error) {
	f.frozen = false
	return client.ContainerUnpauseResult{}, nil
}

func (f *lateFreeze) ExecCreate(ctx context.Context, id string, o client.ExecCreateOptions) (client.ExecCreateResult, error) {
	f.execs++
	if f.frozen || f.stale > 0 {
		f.stale--
		return client.ExecCreateResult{}, fmt.Errorf("Error response from daemon: Container %s is paused, unpause the container before exec", id)
	}
	return client.ExecCreateResult{ID: "exec"}, nil
}

func (f *lateFreeze) ExecAttach(ctx context.Context, id string, o client.ExecAttachOptions) (client.ExecAttachResult, error) {
	return client.ExecAttachResult{}, errAttach
}

// TestExecAfterUnpause: an Exec right after Unpause waits out the
// daemon's stale pause; one in a sandbox paused now, or never thawed by
// this engine, is ErrPaused at once.
func TestExecAfterUnpause(t *testing.T) {
	ctx := context.Background()
	f := &lateFreeze{}
	d := &Engine{Client: f}

	if err := d.Pause(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, "c", []string{"true"}, ""); !errors.Is(err, engine.ErrPaused) || f.execs != 1 {
		t.Fatalf("Exec in a paused container: %v after %d calls, want ErrPaused after 1", err, f.execs)
	}
	if err := d.Unpause(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	f.execs = 0
	if _, err := d.Exec(ctx, "c", []string{"true"}, ""); !errors.Is(err, errAttach) || f.execs != 3 {
		t.Fatalf("Exec after Unpause: %v after %d calls, want the attach's error after 3", err, f.execs)
	}

	// Paused again: no waiting, whatever the last Unpause.
	if err := d.Pause(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	f.execs = 0
	start := time.Now()
	if _, err := d.Exec(ctx, "c", []string{"true"}, ""); !errors.Is(err, engine.ErrPaused) || f.execs != 1 {
		t.Fatalf("Exec after a second Pause: %v after %d calls, want ErrPaused after 1", err, f.execs)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Exec in a paused container took %v", d)
	}

	// A container that stays paused after the Unpause is reported once
	// the window ends; a cancelled ctx ends the wait at once.
	if err := d.Unpause(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	f.frozen = true
	d.unpaused.Store("c", time.Now().Add(-staleFreezeWindow+300*time.Millisecond))
	start = time.Now()
	if _, err := d.Exec(ctx, "c", []string{"true"}, ""); !errors.Is(err, engine.ErrPaused) {
		t.Fatalf("Exec in a container still paused: %v, want ErrPaused", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 10*time.Second {
		t.Errorf("Exec in a container still paused returned after %v, want about 300ms", d)
	}
	if _, ok := d.unpaused.Load("c"); ok {
		t.Error("the expired Unpause is still on record")
	}
	d.unpaused.Store("c", time.Now())
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := d.Exec(cctx, "c", []string{"true"}, ""); !errors.Is(err, engine.ErrPaused) || !strings.Contains(err.Error(), "is paused") {
		t.Fatalf("Exec with a short ctx: %v, want ErrPaused", err)
	}
	if err := cctx.Err(); err == nil {
		t.Error("Exec returned before its ctx ended")
	}
}
