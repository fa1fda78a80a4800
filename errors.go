package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/dockersandbox/sandbox/internal/tarx"
)

// Errors returned by a sandbox. Test for them with errors.Is. File
// operations return *fs.PathError values; besides the errors below, they
// wrap fs.ErrNotExist and fs.ErrPermission, so the usual checks work.
var (
	// ErrIsDir: the path is a directory where a file is needed.
	ErrIsDir = fsops.ErrIsDir
	// ErrNotDir: the path, or one of its parents, is not a directory.
	ErrNotDir = fsops.ErrNotDir
	// ErrInvalidPath: the path is empty, contains a NUL byte, or is otherwise unusable.
	ErrInvalidPath = fsops.ErrInvalidPath
	// ErrNotRegular: the path is not a regular file (a device, FIFO or socket).
	ErrNotRegular = fsops.ErrNotRegular
	// ErrNotText: Edit found a file that is not valid UTF-8.
	ErrNotText = fsops.ErrNotText
	// ErrStringNotFound: Edit did not find the old string.
	ErrStringNotFound = fsops.ErrStringNotFound
	// ErrMultipleOccurrences: Edit found the old string more than once
	// without replaceAll.
	ErrMultipleOccurrences = fsops.ErrMultipleOccurrences
	// ErrOffsetOutOfRange: Read was asked to start beyond the file's last line.
	ErrOffsetOutOfRange = fsops.ErrOffsetOutOfRange
	// ErrBinaryTooLarge: Read found a binary file too large to return as base64.
	ErrBinaryTooLarge = fsops.ErrBinaryTooLarge
	// ErrInvalidPattern: a glob or grep pattern is empty or contains "..".
	ErrInvalidPattern = fsops.ErrInvalidPattern
	// ErrPatternTooBroad: a glob's braces expand to too many patterns.
	ErrPatternTooBroad = fsops.ErrPatternTooBroad
	// ErrNoSpace: the sandbox's disk (or tmpfs) is full. Write and
	// UploadFiles leave the old file intact when it happens.
	ErrNoSpace error = syscall.ENOSPC
	// ErrTooLarge: a download exceeds the sandbox's max download bytes.
	ErrTooLarge = errors.New("file too large")
	// ErrUnsupportedArch: the image's architecture has no helper build
	// (amd64 and arm64 are supported).
	ErrUnsupportedArch = helperbin.ErrUnsupportedArch

	// ErrImageNotFound: the image is not on the daemon and was not pulled
	// (pull policy, or the pull failed).
	ErrImageNotFound = docker.ErrImageNotFound
	// ErrDaemonUnreachable: the Docker daemon did not answer.
	ErrDaemonUnreachable = docker.ErrDaemonUnreachable
	// ErrClosed: the sandbox was closed.
	ErrClosed = errors.New("sandbox: closed")
	// ErrGone: the sandbox's container stopped or was removed from outside.
	ErrGone = errors.New("sandbox: container is gone")
	// ErrInvalidOption: an option's value was refused, or the option was
	// given to a call it does not apply to; no container was made.
	ErrInvalidOption = errors.New("sandbox: invalid option")
	// ErrEmptyCommand: Execute or Command got an empty command.
	ErrEmptyCommand = errors.New("sandbox: command must be a non-empty string")
	// ErrCommandTooLong: Execute, Command or StartProcess got a command
	// longer than MaxCommandBytes. Nothing ran.
	ErrCommandTooLong = errors.New("sandbox: command too long")
	// ErrUnknownUser: ExecUser or Cmd.User named a user (or group) that
	// the sandbox's /etc/passwd (or /etc/group) does not have. Nothing
	// ran; the sandbox stays usable.
	ErrUnknownUser = errors.New("sandbox: unknown user")
	// ErrHelper: the in-container helper failed or broke the protocol.
	ErrHelper = errors.New("sandbox: helper failed")
	// ErrProtocolVersion: the helper in the container speaks another
	// protocol version than this library, or predates what a call needs
	// (a terminal, processes, Dial, Watch, Stat): the error says what it
	// cannot do, and a new sandbox has a helper that can. It also matches
	// ErrHelper.
	ErrProtocolVersion = fmt.Errorf("%w: protocol version mismatch", ErrHelper)
)

// ErrStillRemoving: Close's bound ended while the daemon was removing the
// container (a large writable layer takes a while). The daemon goes on
// removing it whatever became of the call; the container disappears later,
// and calling Close again waits for that (within its bound).
var ErrStillRemoving = errors.New("sandbox: the daemon is still removing the container")

// ErrPaused: the sandbox is paused (Pause, WithAutoPause, or the engine's
// pause from outside) and the call was not made. Resume it first, or make
// the sandbox WithAutoResume.
var ErrPaused = errors.New("sandbox: paused")

// ErrStopped: the sandbox is stopped (Stop, or Close with
// WithAutoRemove(false)): its files are kept, its processes are gone.
// Restart starts it again; Attach with WithStart reattaches to it. It also
// matches ErrGone.
var ErrStopped = fmt.Errorf("%w: stopped", ErrGone)

// ErrNoTerminal: Resize on a command that does not run on a terminal
// (Cmd.TTY unset).
var ErrNoTerminal = errors.New("sandbox: the command has no terminal")

// ErrUnsafeArchive: Hydrate (or Persist, for what the container sent)
// refused an archive entry: an absolute name or one with "..", a symlink
// out of the target (for Hydrate), a hard link to anything but an earlier
// file of the archive, an entry under a link or a file of the archive, a
// device, FIFO or sparse file. The error names the entry.
var ErrUnsafeArchive = tarx.ErrUnsafe

// ErrOutputDropped reports that Follow skipped output the process's log no
// longer held when it was read (the writer was slower than the process and
// the log wrapped). The error is an *OutputDroppedError, which counts the
// bytes.
var ErrOutputDropped = errors.New("sandbox: process output dropped")

// Errors of processes (see StartProcess). Test for them with errors.Is.
var (
	// ErrProcessNotFound: the sandbox has no process with the ID (never
	// started, forgotten, or the sandbox's container restarted since).
	ErrProcessNotFound = errors.New("sandbox: process not found")
	// ErrProcessDone: the process exited; it takes no input or signal.
	ErrProcessDone = errors.New("sandbox: process already exited")
	// ErrStdinClosed: CloseStdin was called; the process takes no more input.
	ErrStdinClosed = errors.New("sandbox: process stdin closed")
	// ErrTooManyProcesses: the sandbox's process table is full of running
	// processes (it holds 1024, forgetting the oldest exited ones first).
	ErrTooManyProcesses = errors.New("sandbox: too many processes")
)

// gone turns the engine's "no such sandbox", "not running" and "paused"
// answers into ErrGone and ErrPaused; other errors pass through.
func gone(err error) error {
	err = docker.Classify(err) // a Docker client's error, from a Docker-only path
	switch {
	case err == nil, errors.Is(err, ErrGone):
		return err
	case errors.Is(err, engine.ErrPaused): // an exec on a paused container
		return fmt.Errorf("%w: %v", ErrPaused, err)
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrNotRunning):
		return fmt.Errorf("%w: %v", ErrGone, err) // the last one: Podman's exec on a stopped container, too
	}
	return err
}

// daemonErr turns a failure to reach the engine into ErrDaemonUnreachable.
var daemonErr = docker.DaemonErr
