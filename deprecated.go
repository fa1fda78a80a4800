package sandbox

import "context"

// The names below are the ones this package had before it settled on one
// name per idea. Each forwards to its replacement and will be removed in a
// later release; go fix (its inline analyzer) rewrites callers. See
// CHANGELOG.md.

// DockerSandbox is the former name of Sandbox, which is engine-neutral.
//
// Deprecated: use Sandbox.
//
//go:fix inline
type DockerSandbox = Sandbox

// ProcState is the former name of ProcessStatus.
//
// Deprecated: use ProcessStatus.
//
//go:fix inline
type ProcState = ProcessStatus

// Start is the former name of StartProcess: it starts a process, while
// Stop, Restart and WithStart act on the sandbox.
//
// Deprecated: use StartProcess.
//
//go:fix inline
func (s *Sandbox) Start(ctx context.Context, command string, opts ...ProcessOption) (*Process, error) {
	return s.StartProcess(ctx, command, opts...)
}

// WithProcessDir is the former name of ProcessDir.
//
// Deprecated: use ProcessDir.
//
//go:fix inline
func WithProcessDir(dir string) ProcessOption { return ProcessDir(dir) }

// WithProcessEnv is the former name of ProcessEnv.
//
// Deprecated: use ProcessEnv.
//
//go:fix inline
func WithProcessEnv(env ...string) ProcessOption { return ProcessEnv(env...) }

// WithLogSize is the former name of ProcessLogSize.
//
// Deprecated: use ProcessLogSize.
//
//go:fix inline
func WithLogSize(n int) ProcessOption { return ProcessLogSize(n) }

// WithTTY is the former name of ProcessTTY.
//
// Deprecated: use ProcessTTY.
//
//go:fix inline
func WithTTY(rows, cols int) ProcessOption { return ProcessTTY(rows, cols) }

// Offset is the former name of ReadOffset.
//
// Deprecated: use ReadOffset.
//
//go:fix inline
func Offset(line int) ReadOption { return ReadOffset(line) }

// Limit is the former name of ReadLimit.
//
// Deprecated: use ReadLimit.
//
//go:fix inline
func Limit(lines int) ReadOption { return ReadLimit(lines) }

// FromSnapshot is the former name of WithSnapshot.
//
// Deprecated: use WithSnapshot.
//
//go:fix inline
func FromSnapshot(snap *Snapshot) Option { return WithSnapshot(snap) }
