package sandbox_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func ExampleSandbox_Execute_timeout() {
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

func ExampleSandbox_Command() {
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

func ExampleSandbox_Edit() {
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

func ExampleSandbox_Grep() {
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

// The runnable Examples (example*_test.go, in every module of the
// repository) and the programs under examples/ import no internal package,
// so that a user can copy them into a module of their own.
func TestExamplesUsePublicAPI(t *testing.T) {
	t.Parallel()
	checked := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		inExamples := strings.HasPrefix(filepath.ToSlash(p), "examples/")
		if d.IsDir() || !strings.HasSuffix(p, ".go") || !inExamples && !strings.HasPrefix(d.Name(), "example") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		require.NoError(t, err)
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			assert.False(t, strings.HasPrefix(path, "github.com/dockersandbox/sandbox/") && strings.Contains(path+"/", "/internal/"),
				"%s imports %s", p, path)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, checked, 5, "the example files were found")
}

func ExampleWithEngine() {
	ctx := context.Background()
	// The Docker engine, from the environment (DOCKER_HOST…); another
	// engine (Kubernetes') is passed the same way.
	eng, err := sandbox.DockerEngine(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close() // after the sandboxes: Close leaves the engine open

	sb, err := sandbox.New(ctx, sandbox.WithEngine(eng), exampleImage)
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
	fmt.Print(resp.Output) // eng.Name() says "docker", or "podman"
	// Output:
	// hello from /workspace
}

// A program that shares the daemon labels its sandboxes, then lists and
// prunes only those: other programs' sandboxes are never touched. The
// criteria of a Filter combine with AND.
func ExamplePrune() {
	ctx := context.Background()
	app := map[string]string{"com.example.app": "report-builder"} // this program
	run := map[string]string{"com.example.run": rand.Text()}      // this run of it
	sb, err := sandbox.New(ctx, exampleImage, sandbox.WithLabels(app), sandbox.WithLabels(run))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	list, err := sandbox.List(ctx, sandbox.Filter{Labels: run})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("listed", len(list), list[0].ID == sb.ID())

	// At start-up, the orphans of an earlier run of this program (it
	// crashed before Close) and anything of it older than a day:
	_, _ = sandbox.Prune(ctx, sandbox.Filter{Labels: app, DeadOwners: true})
	_, _ = sandbox.Prune(ctx, sandbox.Filter{Labels: app, OlderThan: 24 * time.Hour})

	// At shutdown, everything this run made:
	removed, err := sandbox.Prune(ctx, sandbox.Filter{Labels: run})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("removed", len(removed))
	// Output:
	// listed 1 true
	// removed 1
}

// WaitReady lets a program pay for the pool's first sandbox at start-up,
// not on its first Get.
func ExamplePool_WaitReady() {
	ctx := context.Background()
	pool, err := sandbox.NewPool(ctx, sandbox.PoolSize(1), sandbox.PoolSandboxOptions(exampleImage))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	if err := pool.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	sb, err := pool.Get(ctx) // handed out at once
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	resp, _ := sb.Execute(ctx, "echo ready")
	fmt.Print(resp.Output)
	// Output: ready
}
