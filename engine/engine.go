// Package engine is the seam between the sandbox library and what runs its
// sandboxes: Docker (and Podman, through its Docker-compatible API),
// Kubernetes, or another engine. An Engine makes a sandbox whose PID 1 is
// the library's in-container helper, opens byte streams to new processes
// in it (the helper's channel runs over one), moves tar archives in and
// out, inspects, lists and removes sandboxes. Everything above that (the
// helper's protocol, commands, files, processes, ports) needs only the
// stream.
//
// Implementations return errors that wrap the sentinels of this package
// where they apply (ErrNotFound, ErrNotRunning, ErrPaused, ErrUnreachable),
// so that the library maps them onto its own. The library's sandbox
// package gets a Docker engine with sandbox.DockerEngine and takes any
// engine with sandbox.WithEngine; engine/enginetest checks an
// implementation against a real backend.
package engine

import (
	"context"
	"errors"
	"io"
	"time"
)

// Engine runs sandboxes. Its methods are safe for concurrent use, honour
// their context (a cancelled one returns promptly with its error), and
// identify a sandbox by the ID or name Create returned or List found.
type Engine interface {
	// Name names the engine: "docker", "podman", "kubernetes".
	Name() string

	// Create makes and starts a sandbox as spec says: PID 1 is
	// spec.Command (the helper's init command line), with the helper
	// binary at spec.Helper.Path and spec.WorkingDir created, owned by
	// spec.User. It returns once the sandbox runs. On failure nothing is
	// left behind, or what is left carries spec.Labels, so that a List by
	// them finds it (the library's Prune removes it).
	Create(ctx context.Context, spec *Spec) (Info, error)

	// Exec starts argv in the running sandbox id as user ("" is the
	// sandbox's user; the image's user syntax: "name", "uid", "uid:gid"),
	// in the directory "/", and returns a bidirectional stream to it that
	// outlives ctx (ctx bounds the start only). A missing sandbox is
	// ErrNotFound; a stopped one ErrNotRunning; a paused one ErrPaused.
	// An engine that cannot run a process as another user returns an
	// error wrapping errors.ErrUnsupported for a user other than "".
	Exec(ctx context.Context, id string, argv []string, user string) (Stream, error)

	// Inspect describes the sandbox id; a missing one is ErrNotFound.
	Inspect(ctx context.Context, id string) (Info, error)

	// List returns the sandboxes, in any state, that carry every one of
	// labels with that value (an empty value: the label whatever its
	// value).
	List(ctx context.Context, labels map[string]string) ([]Info, error)

	// Remove kills the sandbox (no grace) and deletes it with what it
	// alone used (anonymous volumes, scratch space). A missing sandbox is
	// not an error; one the engine is removing already is waited for
	// within ctx.
	Remove(ctx context.Context, id string) error

	// CopyTo extracts the tar archive into the directory dir of the
	// sandbox, as Docker's archive API does (entries relative to dir,
	// their owners and modes kept). A missing dir is refused with an
	// error wrapping fs.ErrNotExist, or made (Podman does): the library
	// makes sure it exists first. A file of the archive where the sandbox
	// has a directory is ErrIsDir; a full disk, syscall.ENOSPC.
	CopyTo(ctx context.Context, id, dir string, tar io.Reader) error

	// CopyFrom returns a tar archive of path in the sandbox, as Docker's
	// archive API does: one entry named after path's base name (with or
	// without a trailing "/" for a directory), the tree under it for a
	// directory, symlinks not followed. A missing path is
	// an error wrapping fs.ErrNotExist (a missing sandbox, ErrNotFound).
	// The caller closes the archive.
	CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error)

	// Close releases the engine's connections; the sandboxes stay.
	Close() error
}

// Pauser is an Engine that can freeze a sandbox's processes (the cgroup
// freezer) and thaw them.
type Pauser interface {
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
}

// Stopper is an Engine that can stop a sandbox, keeping its files, and
// start it again with the same PID 1.
type Stopper interface {
	// Stop sends PID 1 the stop signal and kills it after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Start starts a stopped sandbox again.
	Start(ctx context.Context, id string) error
}

// ExecCopier is an Engine whose CopyTo and CopyFrom each start an exec
// in the sandbox (it has no archive API of its own) when CopiesByExec
// says so: the library then moves files of every size over the helper's
// shared channel, which is as fast and starts nothing, and calls CopyTo
// and CopyFrom only for what the helper cannot do itself.
type ExecCopier interface {
	CopiesByExec() bool
}

// Meter is an Engine that measures what its sandboxes use. A missing
// sandbox is ErrNotFound; one neither running nor paused, ErrNotRunning.
// An engine that relays another may return an error wrapping
// errors.ErrUnsupported.
type Meter interface {
	Usage(ctx context.Context, id string) (Usage, error)
}

// Usage is what a sandbox uses, as its engine measures it (not its
// helper: the sandbox cannot lie about it). A field the engine cannot
// measure is zero (Disk: -1).
type Usage struct {
	Read    time.Time     // when the engine measured
	Started time.Time     // when the sandbox's PID 1 started; zero if unknown
	CPU     time.Duration // CPU time of its processes since it started
	// Memory is the memory in use now, less the page cache it can drop
	// (as docker stats shows it; an engine that does not tell the cache
	// apart, Podman 4.3, counts it).
	Memory      uint64
	MemoryPeak  uint64 // the most it used (cgroup v1's max_usage; 0 where the engine does not say)
	MemoryLimit uint64 // its limit (the host's memory when it has none)
	Processes   uint64 // its processes, threads counted as the pids cgroup counts them
	NetworkRx   uint64 // bytes its network interfaces received
	NetworkTx   uint64 // bytes its network interfaces sent
	// Disk is the bytes in its writable layer (its working directory
	// included unless that is a tmpfs, which counts as Memory); -1 if
	// unknown.
	Disk int64
}

// Stream is a process started by Exec: its stdin, stdout and stderr.
// Both readers must be read (or the stream closed): an engine may carry
// them on one connection, where an unread one stalls the other.
type Stream interface {
	// Write writes to the process's stdin.
	Write(p []byte) (int, error)
	// CloseWrite ends the process's stdin; its output goes on.
	CloseWrite() error
	// Stdout is the process's standard output; it ends (io.EOF) when the
	// process closed it or the stream ended.
	Stdout() io.Reader
	// Stderr is the process's standard error, as Stdout.
	Stderr() io.Reader
	// Close ends the stream at once: blocked reads and writes return.
	// The engine's process may go on until it notices.
	Close() error
}

// State is a sandbox's state. The values are Docker's.
type State string

// The states of a sandbox.
const (
	StateCreated    State = "created"    // made, never started
	StateRunning    State = "running"    // PID 1 runs
	StatePaused     State = "paused"     // frozen (Pauser)
	StateRestarting State = "restarting" // being started again
	StateExited     State = "exited"     // PID 1 ended (or Stopper stopped it)
	StateRemoving   State = "removing"   // being removed
	StateDead       State = "dead"       // removal failed half way
	StateUnknown    State = ""           // the engine did not say
)

// Info describes a sandbox as the engine sees it.
type Info struct {
	ID       string            // the engine's full ID (a Docker container ID, a pod's UID or name)
	Name     string            // the name (a container's without its "/", a pod's)
	Image    string            // the image it runs, as given
	Labels   map[string]string // its labels
	State    State
	ExitCode int       // PID 1's exit status, when State is StateExited
	Created  time.Time // when the engine made it; zero if unknown
	// Arch is the architecture of the image's binaries ("amd64",
	// "arm64"), which the helper must match; "" if unknown.
	Arch string
	// Command is PID 1's argv, as Spec.Command gave it.
	Command []string
	// User is the sandbox's default user, as Spec.User gave it.
	User string
	// WorkingDir is the sandbox's working directory as the engine knows
	// it ("" if it does not; the library records it in a label too).
	WorkingDir string
	// RemoveOnExit says that the engine deletes the sandbox when PID 1
	// ends (Spec.RemoveOnExit).
	RemoveOnExit bool
}

// Errors that engines wrap, for errors.Is.
var (
	// ErrNotFound: no such sandbox.
	ErrNotFound = errors.New("engine: no such sandbox")
	// ErrNotRunning: the sandbox exists and is not running (stopped,
	// exited, being removed): a process cannot start in it.
	ErrNotRunning = errors.New("engine: sandbox is not running")
	// ErrPaused: the sandbox is paused.
	ErrPaused = errors.New("engine: sandbox is paused")
	// ErrUnreachable: the engine (its daemon, its API server) cannot be
	// reached.
	ErrUnreachable = errors.New("engine: unreachable")
	// ErrIsDir: CopyTo met a directory in the sandbox where the archive
	// has a file.
	ErrIsDir = errors.New("engine: is a directory")
	// ErrImageNotFound: Create found no such image for the sandbox, and
	// could not pull it (or was not allowed to).
	ErrImageNotFound = errors.New("engine: image not found")
)
