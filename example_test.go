package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
)

// The examples run against the test daemon on an image the tests build
// locally (go run ./internal/testenv/cmd/testimages); in your code, any
// image works (the default is DefaultImage). They use the public API only,
// so they can be copied as they are.
var exampleImage = sandbox.WithImage("dockersandbox-test/busybox:1")

func ExampleNew() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage, sandbox.WithMemory(256<<20), sandbox.WithNetworkMode("none"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	resp, err := sb.Execute(ctx, "echo hello from $(pwd)")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(resp.Output)
	fmt.Println("exit code", resp.ExitCode)
	// Output:
	// hello from /workspace
	// exit code 0
}

func ExampleDockerSandbox_Execute_timeout() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	resp, err := sb.Execute(ctx, "echo started; sleep 60", sandbox.ExecTimeout(500*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Output)
	fmt.Println("exit code", resp.ExitCode, "timed out", resp.TimedOut)
	// Output:
	// started
	// Error: Command timed out after 0.5 seconds.
	// exit code 124 timed out true
}

func ExampleDockerSandbox_Command() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	c := sb.Command(ctx, "tr a-z A-Z; exit 3")
	c.Stdin = strings.NewReader("shout\n")
	c.Stdout = os.Stdout
	err = c.Run()
	var exit *sandbox.ExitError
	if errors.As(err, &exit) {
		fmt.Println("exit code", exit.ExitCode())
	}
	// Output:
	// SHOUT
	// exit code 3
}

func ExampleDockerSandbox_Edit() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	if err := sb.Write(ctx, "app/main.py", []byte("print('hi')\nprint('hi again')\n")); err != nil {
		fmt.Println(err)
		return
	}
	_, err = sb.Edit(ctx, "app/main.py", "hi", "hello", false)
	fmt.Println(errors.Is(err, sandbox.ErrMultipleOccurrences))
	n, _ := sb.Edit(ctx, "app/main.py", "hi", "hello", true)
	page, _ := sb.Read(ctx, "app/main.py")
	fmt.Println(n, "replaced:")
	fmt.Println(page.Content)
	_, err = sb.Read(ctx, "app/missing.py")
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// true
	// 2 replaced:
	// print('hello')
	// print('hello again')
	// true
}

func ExampleDockerSandbox_Grep() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	_, _ = sb.UploadFiles(ctx, []sandbox.FileUpload{
		{Path: "src/a.go", Content: []byte("package a\n// TODO: fix\n")},
		{Path: "src/b.txt", Content: []byte("TODO: not go\n")},
	})
	found, _ := sb.Grep(ctx, "TODO", "", sandbox.GrepGlob("*.go"))
	for _, m := range found.Matches {
		fmt.Printf("%s:%d: %s\n", m.Path, m.Line, m.Text)
	}
	files, _ := sb.Glob(ctx, "**/*", "") // "": the working directory, as for Grep
	for _, f := range files.Matches {
		fmt.Println(f.Path)
	}
	// Output:
	// /workspace/src/a.go:2: // TODO: fix
	// /workspace/src/a.go
	// /workspace/src/b.txt
}

func ExampleNewPool() {
	ctx := context.Background()
	pool, err := sandbox.NewPool(ctx, sandbox.PoolSize(2), sandbox.PoolSandboxOptions(exampleImage))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	sb, err := pool.Get(ctx) // ready at once when the pool has one
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	resp, _ := sb.Execute(ctx, "echo pooled")
	fmt.Print(resp.Output)
	// Output: pooled
}
