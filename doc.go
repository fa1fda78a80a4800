// Package sandbox gives an AI agent an isolated Docker container to work
// in: run shell commands, read, write, edit and search files, and move
// files in and out. It is the Go counterpart of the Python DockerSandbox
// (langchain-docker-backend over deepagents' sandbox protocol), with its
// defects fixed: timeouts and cancellation kill the command's whole process
// tree, output is capped while it streams, file operations need nothing in
// the image (no python3, no GNU tools), paths are never handed to a shell,
// and Close is fast and leaves nothing behind.
//
// New creates a sandbox; Close removes it:
//
//	sb, err := sandbox.New(ctx, sandbox.WithImage("python:3.13-slim"))
//	if err != nil {
//		return err
//	}
//	defer sb.Close()
//	resp, err := sb.Execute(ctx, "python3 --version")
//
// Every container gets a small static helper binary, copied in before it
// starts, as its main process: it reaps zombies, stops at once, runs each
// command in its own process group and does the file operations on the
// container's filesystem as the sandbox's user sees it.
//
// Errors are typed: file operations return *fs.PathError values that match
// fs.ErrNotExist, fs.ErrPermission or this package's errors with
// errors.Is. A DockerSandbox is safe for concurrent use.
package sandbox
