// Command quickstart creates a sandbox, runs a command, writes, edits,
// reads and searches a file, and removes the sandbox.
//
//	go run ./examples/quickstart -image python:3.13-slim
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/dockersandbox/sandbox"
)

func main() {
	image := flag.String("image", sandbox.DefaultImage, "image to run the sandbox on")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, *image); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, image string) error {
	sb, err := sandbox.New(ctx, sandbox.WithImage(image), sandbox.WithPullProgress(os.Stderr))
	if err != nil {
		return err
	}
	defer sb.Close()
	fmt.Println("sandbox", sb.ID(), "working in", sb.WorkingDir())

	resp, err := sb.Execute(ctx, "echo hello from $(uname -s); ls /")
	if err != nil {
		return err
	}
	fmt.Printf("exit %d:\n%s", resp.ExitCode, resp.Output)

	if err := sb.Write(ctx, "notes/todo.txt", []byte("buy milk\ncall mom\n")); err != nil {
		return err
	}
	if _, err := sb.Edit(ctx, "notes/todo.txt", "milk", "oat milk", false); err != nil {
		return err
	}
	page, err := sb.Read(ctx, "notes/todo.txt")
	if err != nil {
		return err
	}
	fmt.Printf("notes/todo.txt (%d lines):\n%s\n", page.TotalLines, page.Content)

	found, err := sb.Grep(ctx, "mom", "")
	if err != nil {
		return err
	}
	for _, m := range found.Matches {
		fmt.Printf("grep: %s:%d: %s\n", m.Path, m.Line, m.Text)
	}

	resp, err = sb.Execute(ctx, "sleep 30", sandbox.ExecTimeout(time.Second))
	if err != nil {
		return err
	}
	fmt.Printf("timeout: exit %d: %s\n", resp.ExitCode, resp.Output)
	return nil
}
