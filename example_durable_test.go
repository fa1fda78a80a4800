package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dockersandbox/sandbox"
)

// Pause freezes every process; a call on the paused sandbox fails with
// ErrPaused until Resume (or resumes it first, WithAutoResume).
func ExampleSandbox_Pause() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close() // works on a paused sandbox too
	if err := sb.Pause(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, err = sb.Execute(ctx, "echo hi")
	fmt.Println(errors.Is(err, sandbox.ErrPaused))
	if err := sb.Resume(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, err := sb.Execute(ctx, "echo hi")
	fmt.Print(res.Output, err, "\n")
	// Output:
	// true
	// hi
	// <nil>
}

// WithAutoPause pauses a sandbox nobody uses; the next call resumes it.
func ExampleWithAutoPause() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, append(publicExampleOptions, sandbox.WithAutoPause(200*time.Millisecond))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	// Idle for 200 ms, it pauses (the engine's pause itself takes a moment).
	for deadline := time.Now().Add(10 * time.Second); !sb.Paused() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println(sb.Paused())
	res, err := sb.Execute(ctx, "echo resumed")
	fmt.Print(res.Output, err, "\n")
	// Output:
	// true
	// resumed
	// <nil>
}

// Stop ends every process and keeps the files; Restart brings the sandbox
// back, its helper PID 1 again.
func ExampleSandbox_Stop() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, append(publicExampleOptions, sandbox.WithAutoRemove(false))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		// Close with WithAutoRemove(false) stops; take it back to remove it.
		_ = sb.Close()
		if again, err := sandbox.Attach(ctx, sb.ID(), sandbox.WithStart()); err == nil {
			_ = again.Close()
		}
	}()
	if err := sb.Write(ctx, "notes.txt", []byte("kept")); err != nil {
		fmt.Println(err)
		return
	}
	if err := sb.Stop(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, err = sb.Execute(ctx, "true")
	fmt.Println(errors.Is(err, sandbox.ErrStopped))
	if err := sb.Restart(ctx); err != nil {
		fmt.Println(err)
		return
	}
	res, err := sb.Execute(ctx, "cat notes.txt")
	fmt.Print(res.Output, " ", err, "\n")
	// Output:
	// true
	// kept <nil>
}

// The lifetime lives in the container: any handle reads and changes it.
func ExampleSandbox_SetLifetime() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, append(publicExampleOptions, sandbox.WithLifetime(10*time.Minute))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if err := sb.SetLifetime(ctx, time.Hour); err != nil { // extend
		fmt.Println(err)
		return
	}
	other, err := sandbox.Attach(ctx, sb.ID())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Detach()
	l, err := other.Lifetimes(ctx)
	fmt.Println(l.Lifetime, l.IdleTimeout, err)
	// Output:
	// 1h0m0s 0s <nil>
}

func ExampleSandbox_Snapshot() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage, sandbox.WithNetworkMode("none"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	if err := sb.Write(ctx, "state.txt", []byte("before the fork\n")); err != nil {
		fmt.Println(err)
		return
	}
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer snap.Remove(ctx) // after the forks are closed (defers run last first)

	forks, err := snap.Fork(ctx, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, f := range forks {
		defer f.Close()
		resp, _ := f.Execute(ctx, fmt.Sprintf("cat state.txt; echo try %d >> state.txt; tail -1 state.txt", i))
		fmt.Print(resp.Output)
	}
	// Output:
	// before the fork
	// try 0
	// before the fork
	// try 1
}

func ExampleSandbox_Persist() {
	ctx := context.Background()
	src, err := sandbox.New(ctx, exampleImage, sandbox.WithNetworkMode("none"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	dst, err := sandbox.New(ctx, exampleImage, sandbox.WithNetworkMode("none"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dst.Close()

	_ = src.Write(ctx, "notes/todo.md", []byte("- ship it\n"))
	var archive bytes.Buffer // any io.Writer: a file, object storage...
	if err := src.Persist(ctx, &archive); err != nil {
		fmt.Println(err)
		return
	}
	if err := dst.Hydrate(ctx, &archive); err != nil {
		fmt.Println(err)
		return
	}
	resp, _ := dst.Execute(ctx, "cat notes/todo.md")
	fmt.Print(resp.Output)
	// Output:
	// - ship it
}
