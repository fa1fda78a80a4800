// Package sandbox gives an AI agent an isolated container to work in: it
// runs shell commands, reads, writes, edits and searches files, moves files
// in and out, and runs background processes, terminals and connections to
// ports inside the container. Docker (or Podman, through its
// Docker-compatible API) runs the containers unless [WithEngine] names
// another engine.
//
// [New] creates a sandbox; its Close method removes it:
//
//	sb, err := sandbox.New(ctx, sandbox.WithImage("python:3.13-slim"))
//	if err != nil {
//		return err
//	}
//	defer sb.Close()
//	resp, err := sb.Execute(ctx, "python3 --version")
//	if err != nil {
//		return err
//	}
//	fmt.Print(resp.Output) // the exit status is resp.ExitCode, not an error
//
// # Trust model
//
// The code in a sandbox is not trusted, and neither is anything the
// container sends back: command output, file contents and names, and every
// answer of the helper that serves the library inside it.
//
// The helper is a small static binary, built into this package for amd64
// and arm64 and copied into each container before it starts, as its PID 1
// (in /.dockersandbox). It reaps zombies, runs each command in a process
// group of its own under a reaper that kills the command's whole tree on a
// timeout or a cancelled context, however its processes detached, and does
// the file operations itself, as the sandbox's user sees the files: the
// image needs no shell tools and no python3. The library reaches it over
// one long-lived engine exec and treats it as hostile: every frame is
// checked against what its operation may carry before it is read, so the
// host's memory stays bounded; every call returns by its context's
// deadline, or within the library's own bounds without one; a helper that
// is replaced, stopped or lying breaks its own sandbox, never the calling
// program or another sandbox. What a container protects against, what it
// does not, and what to use when it is not enough: SECURITY.md in the
// repository.
//
// Unlike package os/exec, [Sandbox.Execute] and [Sandbox.Command] do run a
// shell: a command is a shell command line, run with sh -c in the
// container, since running what the agent wrote is the point. No path
// given to a file method ever reaches a shell.
//
// # Paths
//
// Paths name files in the container, never on the host. A path is
// absolute, or relative to the sandbox's working directory
// ([Sandbox.WorkingDir], [DefaultWorkingDir] unless [WithWorkingDir] says
// otherwise), in every method; paths in results are absolute. Paths are
// cleaned, so ".." is resolved lexically: the boundary is the container,
// not the working directory. An empty path, or one holding a NUL byte, is
// [ErrInvalidPath]. Names are bytes: a name that is not valid UTF-8
// reaches exactly that file, and the names Ls, Glob and Grep return reach
// the same file when passed back. Symbolic links resolve inside the
// container. [Sandbox.FS] takes io/fs names instead: [fs.ValidPath] names
// relative to "/".
//
// # Two file APIs
//
// The methods Ls, Read, Write, Edit, Delete, Glob, Grep, UploadFiles and
// DownloadFiles have the shape of deepagents' sandbox protocol, which
// model-facing tools want: Read returns a page of lines with pagination
// fields, media and binary files as base64, and deepagents' text for an
// empty file; Glob and Grep follow its matching rules and report
// Truncated; Edit counts occurrences; UploadFiles and DownloadFiles answer
// for each file in turn, a file's failure in its response's Err, which
// [ErrorCode] turns into deepagents' code. Package tools builds its agent
// tools on them.
//
// [Sandbox.FS] returns the sandbox's file system as a read-only [fs.FS]
// (also [fs.StatFS], [fs.ReadDirFS], [fs.ReadFileFS] and [fs.SubFS]), and
// [Sandbox.Stat] describes one file as an [fs.FileInfo]: the shape Go code
// expects, for [fs.WalkDir], [fs.Glob], template.ParseFS, http.FS and
// testing/fstest. [FS.Open] streams a file in ranges, so that a file of
// any size reads in bounded memory.
//
// From Go, read with FS and Stat, and write with Write, Edit, Delete and
// UploadFiles (FS is read-only); use Read, Glob and Grep for their paging
// and matching rules. Both families report a failed file operation as an
// *[fs.PathError].
//
// The names of the result types follow deepagents' protocol, so that a
// reader who knows it finds them: [ExecuteResponse], [FileUploadResponse]
// and [FileDownloadResponse] are its Responses, [ReadResult], [GlobResult]
// and [GrepResult] its Results. Unlike the protocol's, they carry no error
// text: failures are Go errors (per file, in the transfers' Err).
//
// # Errors
//
// Errors are typed: test them with [errors.Is] and [errors.As]. A failed
// file operation returns an *[fs.PathError] naming the path, which matches
// [fs.ErrNotExist] and [fs.ErrPermission] as the os package's errors do, or
// one of this package's file errors ([ErrIsDir], [ErrNotDir],
// [ErrInvalidPath], [ErrNotRegular], [ErrStringNotFound], [ErrNoSpace],
// [ErrTooLarge], ...). Other failures wrap a sentinel that says what
// happened: [ErrGone] (the container stopped or was removed; [ErrStopped]
// matches it too), [ErrPaused], [ErrClosed], [ErrDaemonUnreachable],
// [ErrImageNotFound], [ErrHelper] and [ErrProtocolVersion] (the helper
// failed or speaks another protocol), and [ErrInvalidOption]: a bad option
// value, or an option given to a call it does not apply to, refused before
// any container exists. [ErrUnknownUser] (a user the container does not
// have) and [ErrCommandTooLong] (a command over [MaxCommandBytes]) are the
// caller's mistakes too; the sandbox stays usable after them. An
// operation the engine cannot do (a snapshot on Kubernetes, say) wraps
// [errors.ErrUnsupported]. A call whose context ends returns the
// context's error.
//
// A command that ran is not an error for Execute: its status is
// [ExecuteResponse.ExitCode] (124 after a timeout, 137 after an
// out-of-memory kill). [Cmd.Run], [Cmd.Wait] and [Cmd.Output] return an
// *[ExitError] for a command that did not succeed, as os/exec does.
//
// # Concurrency
//
// A [Sandbox] is safe for concurrent use by multiple goroutines: calls are
// multiplexed over one channel to the helper, and a call that waits (a
// long command, a slow reader) stalls nothing but itself. So are an [FS],
// a [Process], a [Pool] and an engine, which many sandboxes may share. A
// [Cmd], like an exec.Cmd, cannot be reused after it started.
//
// # Observability
//
// [Sandbox.Usage] reports what a sandbox uses, as its engine measures it
// (not its helper, which the sandbox controls), and [Sandbox.WatchUsage]
// follows it at an interval. [WithAudit] records every
// call as a log/slog record; [WithTracerProvider] (default: the global
// OpenTelemetry provider) makes a span of each, and a command gets the
// span's context in TRACEPARENT. Commands reach records and spans only
// as [WithRedact] allows: by default they are left out, since they can
// hold secrets.
//
// # Engines
//
// Without [WithEngine], New connects to Docker from the environment
// (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) and Close releases
// that connection. [DockerEngine] connects to a Docker daemon with client
// options of your own (a remote host, TLS); other engines, such as
// Kubernetes' in module github.com/dockersandbox/sandbox/k8s, implement
// package engine. Give the engine with WithEngine to New, Attach, List,
// Prune and the snapshot functions; Close of a sandbox does not close it.
// On an engine other than Docker, the options only Docker has are refused
// with [ErrInvalidOption].
//
// The guides in the repository's docs directory cover commands and
// processes, files, ports, durable state (lifetimes, pause, snapshots,
// pools), observability, engines and Kubernetes, the agent tools, the
// command line and framework adapters; mcp/README.md covers the MCP server.
package sandbox
