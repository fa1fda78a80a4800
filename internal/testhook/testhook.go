// Package testhook lets the integration tests reach into package sandbox;
// nothing else may use it.
//
// The tests of integration/ are a package of their own, so an
// export_test.go of package sandbox cannot serve them. Instead package
// sandbox reads the globals here (AfterCreate, AfterSnapshotCommit,
// AckDelay, SnapshotBound, BeforeKill), and fills in, in an init, the functions and
// values that need its types or constants (SetCloseBound, HasPortSocket,
// ConnIsDirect, ChannelKind, AbandonedAfter, LabelPortsDir, MaxIntroductions,
// WithHelperBinary). Unset,
// the globals change nothing in the library's behaviour.
package testhook

import (
	"net"
	"sync/atomic"
	"time"
)

// Read by package sandbox; zero unless a test sets them.
var (
	// AfterCreate, when set, is called by New with the container's ID
	// right after ContainerCreate (a child test process crashes itself
	// there).
	AfterCreate func(id string)

	// AfterSnapshotCommit, when set, is called by Snapshot with the image
	// of its first commit, when it has volumes to add (a child test
	// process crashes itself there).
	AfterSnapshotCommit func(id string)

	// AckDelay is how long (in nanoseconds) each port socket introduction
	// pauses after its acknowledgement.
	AckDelay atomic.Int64

	// SnapshotBound, when above zero, replaces the bound (in
	// nanoseconds) of Snapshot without a deadline.
	SnapshotBound atomic.Int64

	// BeforeKill, when set, is called with the sandbox (a
	// *sandbox.Sandbox) before the exec that kills a lost helper's
	// commands (a test freezes the daemon there).
	BeforeKill atomic.Pointer[func(sb any)]
)

// Registered by package sandbox in an init.
var (
	// SetCloseBound sets the bound of sb's Close (a *sandbox.Sandbox;
	// default 30 s, also with 0), so that a test can end it while the
	// daemon is removing the container.
	SetCloseBound func(sb any, d time.Duration)

	// HasPortSocket reports whether sb (a *sandbox.Sandbox) shares a port
	// socket with its container.
	HasPortSocket func(sb any) bool

	// ConnIsDirect reports whether c, from Dial, goes over the port
	// socket.
	ConnIsDirect func(c net.Conn) bool
	// ChannelKind says how the shared channel of sb (a *sandbox.Sandbox),
	// opened by a call before, reaches its helper: "first" (PID 1's
	// connection to the port socket), "socket" (an exec's connection to
	// it), "exec" (an exec's stream), "" (no channel).
	ChannelKind func(sb any) string

	// AbandonedAfter is how old a never-started sandbox must be for
	// Prune's and New's sweep to take it as abandoned whatever its owner.
	AbandonedAfter time.Duration

	// LabelPortsDir is the label holding a sandbox's port socket
	// directory.
	LabelPortsDir string

	// MaxIntroductions bounds the port socket's connections that wait to
	// introduce themselves.
	MaxIntroductions int

	// WithHelperBinary returns a sandbox.Option (as any) that makes New
	// install bin's helper instead of the committed one: a test's helper
	// built with the sandboxtest tag, which reads the test variables the
	// shipped helper does not.
	WithHelperBinary func(bin func(arch string) ([]byte, error)) any
)

// SetAfterCreate sets AfterCreate. Only for a process that creates no
// other sandbox concurrently.
func SetAfterCreate(f func(id string)) { AfterCreate = f }

// SetAfterSnapshotCommit sets AfterSnapshotCommit.
func SetAfterSnapshotCommit(f func(id string)) { AfterSnapshotCommit = f }

// DelayAfterAck makes each port socket introduction pause for d after its
// acknowledgement, until restore.
func DelayAfterAck(d time.Duration) (restore func()) {
	AckDelay.Store(int64(d))
	return func() { AckDelay.Store(0) }
}

// SetSnapshotBound sets the bound of Snapshot without a deadline and
// returns a function that restores it.
func SetSnapshotBound(d time.Duration) (restore func()) {
	old := SnapshotBound.Swap(int64(d))
	return func() { SnapshotBound.Store(old) }
}

// ChannelIsDirect reports whether the shared channel of sb, opened by a
// call before, goes over the port socket (ChannelKind "first" or
// "socket").
func ChannelIsDirect(sb any) bool {
	k := ChannelKind(sb)
	return k == "first" || k == "socket"
}
