package proto

// What one frame from the helper may carry, by kind, as the library checks
// it before reading the payload: the helper's frames are hostile input, and
// a call whose result is small by contract must cost the host little
// whatever the helper sends. An honest helper stays within these limits
// (see FitResult); a frame over them breaks the protocol.
const (
	// MaxHello bounds the Hello frame.
	MaxHello = 4 << 10
	// MaxItems bounds the entries, matches or stats of one Result, which
	// decode into structs larger than their shortest JSON form.
	MaxItems = 200_000
	// maxListResult bounds a Result of ls, glob, grep, stat and prepare.
	maxListResult = 16 << 20
	// maxReadResult bounds a read Result: a page of at most
	// fsops.MaxPageBytes, each byte escaped as \u00XX at worst.
	maxReadResult = 4 << 20
	// maxSmallResult bounds any other Result (exec, write, edit, ...).
	maxSmallResult = 64 << 10
)

// MaxFrom returns the largest payload the library accepts in a frame of
// kind from a helper serving a request for op ("" when the frame belongs
// to no request).
func MaxFrom(kind Kind, op string) int {
	switch kind {
	case KindHello:
		return MaxHello
	case KindStdout, KindStderr:
		return ChunkSize
	case KindData, KindWindow, KindEOF, KindOpen:
		return maxStreamFrom(kind, op)
	case KindResult:
		if op == "" {
			return maxListResult
		}
		return MaxResult(op)
	}
	return 0 // Alive; nothing else comes from a helper
}

// ReadyLine is what PID 1 writes to its standard output once it handles
// the engine's stop signal; New and a restart wait for it (see the
// library's start), so that a stop right after them ends the helper
// cleanly (status 0) rather than finding the Go runtime's default
// handler (status 2) or no handler at all (the engine's kill after the
// grace period).
const ReadyLine = "dockersandbox-helper: ready\n"

// BootMode is the helper's mode that starts a container from a read-only
// copy of the helper shared with it: argv [shared copy, BootMode, helper
// path, working directory, init, flags...]. It installs the helper at its
// path and executes it as init there (internal/helper's Boot); a boot that
// fails writes why to standard output and exits without ReadyLine.
const BootMode = "boot"
