package engine

import "time"

// Spec is what a sandbox is made of, whatever the engine: the library
// builds it from the sandbox options. Zero values mean the engine's
// defaults (no limit, the image's user and environment).
type Spec struct {
	// Name is the sandbox's name; "" lets the engine pick one. A name in
	// use makes Create fail.
	Name string
	// Image is the image reference, already present or pullable by the
	// engine.
	Image string
	// Labels mark the sandbox (the library's and the user's); List finds
	// it by them.
	Labels map[string]string
	// Env is the environment, as "KEY=value" entries, added to the image's.
	Env []string
	// WorkingDir is the absolute working directory. The engine creates it
	// owned by User (Docker: before start), unless it is among
	// ScratchDirs.
	WorkingDir string
	// User runs PID 1 and, by default, Exec's processes: "name", "uid",
	// "uid:gid" or "name:group" of the image; "" is the image's user.
	User string
	// Command is PID 1's argv: the helper's init command line
	// (Helper.Path first). It replaces the image's entrypoint and command.
	Command []string
	// Helper says where the helper binary goes and where to get it.
	Helper Helper
	// RemoveOnExit makes the engine delete the sandbox when PID 1 ends
	// (Docker's auto-remove).
	RemoveOnExit bool
	// StopGrace is how long the engine lets PID 1 end on the stop signal
	// before it kills it; 0: the engine's default.
	StopGrace time.Duration

	// Memory limits memory, in bytes.
	Memory int64
	// NanoCPUs limits CPU, in billionths of a CPU (1e9 is one CPU).
	NanoCPUs int64
	// PidsLimit limits the number of processes.
	PidsLimit int64
	// NetworkNone gives the sandbox no network but loopback.
	NetworkNone bool
	// ReadOnlyRootfs makes the root filesystem read-only (the helper's
	// directory and ScratchDirs stay writable).
	ReadOnlyRootfs bool
	// NoNewPrivileges forbids gaining privileges (set-ID binaries,
	// file capabilities).
	NoNewPrivileges bool
	// CapDrop lists capabilities to drop ("ALL" for all).
	CapDrop []string
	// ScratchDirs are writable in-memory directories (tmpfs, mode 1777,
	// nosuid, nodev), empty at each start; removed with the sandbox.
	ScratchDirs []string
}

// Helper is the in-container helper's place and binary.
type Helper struct {
	// Dir is the helper's directory in the sandbox, writable by root
	// (with ReadOnlyRootfs too): the library writes files next to the
	// helper there (its limits). The engine makes Dir (mode 0755) and
	// Dir/run (mode 0700, owned by User: PID 1 serves its process table
	// there) before PID 1 starts.
	Dir string
	// Path is the helper binary's path, inside Dir.
	Path string
	// Binary returns the helper built for an image architecture ("amd64",
	// "arm64"). An engine that copies the binary in (Docker) calls it; one
	// that takes it from elsewhere (a helper image) may not.
	Binary func(arch string) ([]byte, error)
}
