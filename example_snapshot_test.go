package sandbox_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dockersandbox/sandbox"
)

func ExampleDockerSandbox_Snapshot() {
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

func ExampleDockerSandbox_Persist() {
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
