package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// These examples use only the public API. They run on a locally built test
// image that is never pulled; in your code any image works (the default is
// DefaultImage).
var publicExampleOptions = []sandbox.Option{
	sandbox.WithImage("dockersandbox-test/busybox:1"),
	sandbox.WithPullPolicy(sandbox.PullNever),
}

// Read a command's output line by line as it runs, as with os/exec.
func ExampleCmd_StdoutPipe() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	cmd := sb.Command(ctx, "for i in 1 2 3; do echo line $i; done")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		fmt.Println("got:", lines.Text())
	}
	// Wait only once everything was read: it closes the pipe.
	if err := cmd.Wait(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// got: line 1
	// got: line 2
	// got: line 3
}

// Feed a command's standard input through a pipe and take its output.
func ExampleCmd_StdinPipe() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	cmd := sb.Command(ctx, "tr a-z A-Z")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		defer stdin.Close() // tr reads until the end of its input
		fmt.Fprintln(stdin, "shout this")
	}()
	out, err := cmd.Output()
	fmt.Printf("%s%v\n", out, err)
	// Output:
	// SHOUT THIS
	// <nil>
}

// Output's *ExitError carries the command's standard error.
func ExampleCmd_Output() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	_, err = sb.Command(ctx, "ls /nonexistent").Output()
	var exitErr *sandbox.ExitError
	if errors.As(err, &exitErr) {
		fmt.Println(exitErr, "-", strings.Contains(string(exitErr.Stderr), "No such file"))
	}
	// Output:
	// exit status 1 - true
}

// Walk the sandbox's working directory with io/fs.
func ExampleSandbox_FS() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	for _, name := range []string{"src/main.go", "src/util/util.go", "README.md"} {
		if err := sb.Write(ctx, name, []byte("// "+name+"\n")); err != nil {
			fmt.Println(err)
			return
		}
	}

	// The FS is rooted at "/"; Sub gives the working directory.
	work, err := fs.Sub(sb.FS(ctx), strings.TrimPrefix(sb.WorkingDir(), "/"))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = fs.WalkDir(work, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fmt.Println(name)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	content, err := fs.ReadFile(work, "src/util/util.go")
	fmt.Printf("%q %v\n", content, err)
	_, err = fs.Stat(work, "missing.txt")
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// README.md
	// src/main.go
	// src/util/util.go
	// "// src/util/util.go\n" <nil>
	// true
}

// Hand a sandbox over: Detach lets go of the handle and leaves the
// container running; another handle (here in the same program, usually in
// another process) attaches by ID and owns it from then on.
func ExampleSandbox_Detach() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close() // after Detach, it leaves the container alone
	if err := sb.Write(ctx, "state.txt", []byte("kept")); err != nil {
		fmt.Println(err)
		return
	}
	id := sb.ID()
	sb.Detach()
	_, err = sb.Execute(ctx, "true")
	fmt.Println(errors.Is(err, sandbox.ErrClosed))

	next, err := sandbox.Attach(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Close() // removes the container
	content, err := next.FS(ctx).ReadFile("workspace/state.txt")
	fmt.Printf("%s %v\n", content, err)
	// Output:
	// true
	// kept <nil>
}
