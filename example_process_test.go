package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox"
)

// StartProcess runs a command in the background; its output is read from a
// cursor, as it comes, and it is killed with everything it started.
func ExampleSandbox_StartProcess() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close() // ends its processes too
	p, err := sb.StartProcess(ctx, "echo ready; while :; do sleep 1; done")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := p.Read(ctx, 0, sandbox.OutputWait(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q running=%v\n", out.Data, out.Info.Running())
	if err := p.Kill(ctx); err != nil {
		fmt.Println(err)
		return
	}
	info, err := p.Wait(ctx)
	fmt.Println(info.State, info.Signal == syscall.SIGKILL, err)
	fmt.Println(errors.Is(p.Signal(ctx, syscall.SIGTERM), sandbox.ErrProcessDone))
	// Output:
	// "ready\n" running=true
	// exited true <nil>
	// true
}

// A process belongs to the sandbox, not to the program that started it:
// another program finds it after Attach (here the same one, through a
// second handle) and follows its output to the end.
func ExampleSandbox_Process() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	p, err := sb.StartProcess(ctx, "for i in 1 2 3; do echo line $i; done; exit 3")
	if err != nil {
		fmt.Println(err)
		return
	}
	other, err := sandbox.Attach(ctx, sb.ID())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.Detach() // lets go without removing the sandbox
	found, err := other.Process(ctx, p.ID())
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := found.Follow(ctx, 0, os.Stdout); err != nil {
		fmt.Println(err)
		return
	}
	info, err := found.Wait(ctx)
	fmt.Println(info.ExitCode, err)
	// Output:
	// line 1
	// line 2
	// line 3
	// 3 <nil>
}

// Write feeds a process's stdin; CloseStdin ends it.
func ExampleProcess_Write() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, publicExampleOptions...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()
	p, err := sb.StartProcess(ctx, "tr a-z A-Z")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := p.Write(ctx, []byte("hello\n")); err != nil {
		fmt.Println(err)
		return
	}
	if err := p.CloseStdin(ctx); err != nil {
		fmt.Println(err)
		return
	}
	var out strings.Builder
	_, err = p.Follow(ctx, 0, &out)
	fmt.Print(out.String(), err, "\n")
	// Output:
	// HELLO
	// <nil>
}

// A shell on a terminal, driven as a person would: type a line, read what
// the terminal shows, resize it, leave with an exit status.
func ExampleCmd_Resize() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, exampleImage)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close()

	cmd := sb.Command(ctx, "PS1='$ ' exec sh")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	keys, _ := cmd.StdinPipe()
	screen, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	lines := bufio.NewScanner(screen)
	// readUntil reads the terminal's lines until one starts with prefix.
	readUntil := func(prefix string) string {
		for lines.Scan() {
			if line := strings.TrimRight(lines.Text(), "\r"); strings.HasPrefix(line, prefix) {
				return line
			}
		}
		return ""
	}

	_, _ = io.WriteString(keys, "echo size: $(stty size)\r")
	fmt.Println(readUntil("size: "))
	_ = cmd.Resize(ctx, 40, 120)
	_, _ = io.WriteString(keys, "echo size: $(stty size)\r")
	fmt.Println(readUntil("size: "))
	_, _ = io.WriteString(keys, "exit 3\r")
	_, _ = io.Copy(io.Discard, screen) // to its end, then Wait
	err = cmd.Wait()
	fmt.Println(err, cmd.ProcessState.ExitCode())
	// Output:
	// size: 24 80
	// size: 40 120
	// exit status 3 3
}
