package proto

import "slices"

// OpSpec is what the protocol says about one operation, the same for the
// library and the helper: what a request of it carries besides its JSON,
// what may come back, whether the library may run it twice, and what a
// helper must have announced (Hello.Caps) to be sent it. The helper's
// dispatch table (package helper, ops.go) says how it is checked and run.
// Adding an operation means a row here and a row there.
type OpSpec struct {
	Op string
	// Input: whether Input frames follow the request (InputStdin: when
	// Request.Stdin is set).
	Input Input
	// Output: the request may be answered with output frames
	// (KindStdout, KindStderr) before its Result.
	Output bool
	// HeldOutput: the output is all there at once (a file's or a process
	// log's bytes), so the helper holds its last frame back to write it
	// with the Result in one write; never a command's output, which must
	// go as it comes.
	HeldOutput bool
	// RetrySafe: running the request twice does no harm, so that the
	// library runs it again on an exec of its own when the shared channel
	// broke under it.
	RetrySafe bool
	// MaxResult bounds the Result payload the library accepts.
	MaxResult int
	// Stream: the request stays open as a stream (stream.go).
	Stream bool
	// Process: the request is served by PID 1's process table.
	Process bool
	// Needs is the capability a helper must announce for the operation;
	// "" for the operations of the version 2 baseline (see Capability).
	Needs Capability
}

// Input says when Input frames follow a request.
type Input uint8

// The kinds of input.
const (
	InputNone   Input = iota
	InputAlways       // the request's data (a write's content)
	InputStdin        // a command's standard input, when Request.Stdin is set
)

// ops is the table of operations, in the order of their constants.
var ops = []OpSpec{
	{Op: OpExec, Input: InputStdin, Output: true, MaxResult: maxSmallResult},
	{Op: OpRead, RetrySafe: true, MaxResult: maxReadResult},
	{Op: OpWrite, Input: InputAlways, MaxResult: maxSmallResult},
	{Op: OpEdit, MaxResult: maxSmallResult},
	{Op: OpLs, RetrySafe: true, MaxResult: maxListResult},
	{Op: OpGlob, RetrySafe: true, MaxResult: maxListResult},
	{Op: OpGrep, RetrySafe: true, MaxResult: maxListResult},
	{Op: OpDelete, MaxResult: maxSmallResult},
	{Op: OpStat, RetrySafe: true, MaxResult: maxListResult},
	{Op: OpPrepare, RetrySafe: true, MaxResult: maxListResult},
	{Op: OpRename, MaxResult: maxSmallResult},
	// A cat from an Offset needs CapCatOffset too (Request.Needs).
	{Op: OpCat, Output: true, HeldOutput: true, MaxResult: maxSmallResult},
	{Op: OpInfo, MaxResult: maxSmallResult, Needs: CapInfo},
	{Op: OpKill, MaxResult: maxSmallResult},

	{Op: OpDial, Stream: true, MaxResult: maxSmallResult, Needs: CapDial},
	{Op: OpWatch, Stream: true, MaxResult: maxSmallResult, Needs: CapWatch},
	{Op: OpAccept, Stream: true, MaxResult: maxSmallResult, Needs: CapAccept},

	{Op: OpProcStart, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcList, Process: true, MaxResult: maxListResult, Needs: CapProcesses},
	{Op: OpProcInfo, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcRead, Process: true, Output: true, HeldOutput: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcWrite, Process: true, Input: InputAlways, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcCloseStdin, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcSignal, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcKill, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcWait, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
	{Op: OpProcResize, Process: true, MaxResult: maxSmallResult, Needs: CapProcesses},
}

// opIndex finds an operation's row.
var opIndex = func() map[string]int {
	m := make(map[string]int, len(ops))
	for i, s := range ops {
		m[s.Op] = i
	}
	return m
}()

// Spec returns the row of op; false for an operation the protocol does
// not have.
func Spec(op string) (OpSpec, bool) {
	i, ok := opIndex[op]
	if !ok {
		return OpSpec{}, false
	}
	return ops[i], true
}

// Ops returns the table of operations.
func Ops() []OpSpec { return slices.Clone(ops) }

// TakesInput reports whether Input frames follow r.
func (r Request) TakesInput() bool {
	s, _ := Spec(r.Op)
	return s.Input == InputAlways || s.Input == InputStdin && r.Stdin
}

// MaxResult returns the largest Result payload the library accepts for op.
func MaxResult(op string) int {
	if s, ok := Spec(op); ok {
		return s.MaxResult
	}
	return maxSmallResult
}

// HasOutput reports whether a request for op may be answered with output
// frames (KindStdout, KindStderr) before its result.
func HasOutput(op string) bool { s, _ := Spec(op); return s.Output }

// HoldsOutput reports whether the helper holds back the last output frame
// of op to write it with the Result (OpSpec.HeldOutput).
func HoldsOutput(op string) bool { s, _ := Spec(op); return s.HeldOutput }

// RetrySafe reports whether running op twice does no harm.
func RetrySafe(op string) bool { s, _ := Spec(op); return s.RetrySafe }

// IsStream reports whether op's request is a stream.
func IsStream(op string) bool { s, _ := Spec(op); return s.Stream }

// IsProcOp reports whether op is a process operation.
func IsProcOp(op string) bool { s, _ := Spec(op); return s.Process }
