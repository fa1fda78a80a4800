package proto

import (
	"encoding/json"
	"time"

	"github.com/dockersandbox/sandbox/internal/fsops"
)

// Process operations (CapProcesses). A process is owned by the
// container's PID 1, not by the connection that started it: it outlives
// the shared channel and the library's process. Request.Proc carries the
// arguments, Result.Proc (or Result.Procs) the answer.
const (
	OpProcStart      = "proc_start"       // Command, Env, Dir, Proc.LogSize, Proc.TTY/Rows/Cols → Proc.Info
	OpProcList       = "proc_list"        // → Procs
	OpProcInfo       = "proc_info"        // Proc.ID → Proc.Info
	OpProcRead       = "proc_read"        // Proc.ID, Cursor, Max, WaitMs → Stdout frames, Proc.{Start,Next,Dropped,Done,Info}
	OpProcWrite      = "proc_write"       // Proc.ID + Input frames → Proc.Written
	OpProcCloseStdin = "proc_close_stdin" // Proc.ID
	OpProcSignal     = "proc_signal"      // Proc.ID, Signal: to the process group
	OpProcKill       = "proc_kill"        // Proc.ID: the whole tree, SIGKILL
	OpProcWait       = "proc_wait"        // Proc.ID, WaitMs → Proc.Info (still running when WaitMs passed)
	OpProcResize     = "proc_resize"      // Proc.ID, Rows, Cols (a TTY process)
)

// Error codes of process operations.
const (
	CodeProcNotFound    = "process_not_found"   // no process has the ID
	CodeProcDone        = "process_done"        // the process exited
	CodeStdinClosed     = "stdin_closed"        // CloseStdin was called before
	CodeCursorAhead     = "cursor_ahead"        // a read cursor beyond the log's end
	CodeProcUnavailable = "process_unavailable" // PID 1 serves no process table
	CodeTooManyProcs    = "too_many_processes"  // the table is full
)

// Process bounds, the same in the library and the helper.
const (
	// DefaultLogSize is a process's output log when the start asks for none.
	DefaultLogSize = 1 << 20
	// MaxLogSize bounds a process's output log.
	MaxLogSize = 64 << 20
	// MaxProcRead bounds the bytes one read returns.
	MaxProcRead = 1 << 20
	// MaxProcWait bounds how long one read or wait request waits in the
	// helper; the library repeats it to wait longer.
	MaxProcWait = 10 * time.Second
	// MaxProcs bounds the processes a sandbox's table holds, running and
	// exited; the oldest exited are forgotten first.
	MaxProcs = 1024
	// MaxProcCommand bounds the command of a process as the table keeps it.
	MaxProcCommand = 64 << 10
	// KeptProcCommand is how much of a process's command the helper's
	// table keeps (ProcInfo.Command), within MaxProcCommand: escaped at
	// worst six times, it fits the Result of a start, info or wait
	// (maxSmallResult), where 64 KiB of command did not.
	KeptProcCommand = 8 << 10
	// MaxProcID bounds a process ID on the wire.
	MaxProcID = 64
)

// ProcRequest holds the arguments of a process operation.
type ProcRequest struct {
	ID      string `json:"id,omitempty"`
	Cursor  int64  `json:"cursor,omitempty"`
	Max     int    `json:"max,omitempty"`
	WaitMs  int64  `json:"wait_ms,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	LogSize int    `json:"log_size,omitempty"`
	TTY     bool   `json:"tty,omitempty"`
	Rows    int    `json:"rows,omitempty"`
	Cols    int    `json:"cols,omitempty"`
}

// ProcInfo describes a process of the table.
type ProcInfo struct {
	ID       string    `json:"id"`
	Command  string    `json:"command"`
	Pid      int       `json:"pid"`
	Running  bool      `json:"running"`
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal,omitempty"` // the signal that ended it, if one did
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
	TTY      bool      `json:"tty,omitempty"`
	LogSize  int       `json:"log_size"`
}

// ProcResult answers a process operation.
type ProcResult struct {
	Info ProcInfo `json:"info"`
	// read: the output sent (as Stdout frames) is the log's bytes
	// [Start, Next); Dropped = Start - the cursor asked for (bytes the
	// log no longer held); Done: the process exited and its output ended,
	// nothing will follow Next.
	Start   int64 `json:"start,omitempty"`
	Next    int64 `json:"next,omitempty"`
	Dropped int64 `json:"dropped,omitempty"`
	Done    bool  `json:"done,omitempty"`
	// write: the bytes the process's stdin took.
	Written int `json:"written,omitempty"`
}

// MarshalJSON implements json.Marshaler: the ID and the command are bytes
// (a command need not be valid UTF-8), carried as fsops.RawString.
func (p ProcInfo) MarshalJSON() ([]byte, error) {
	type plain ProcInfo
	return json.Marshal(struct {
		plain
		ID      fsops.RawString `json:"id"`
		Command fsops.RawString `json:"command"`
	}{plain(p), fsops.RawString(p.ID), fsops.RawString(p.Command)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *ProcInfo) UnmarshalJSON(data []byte) error {
	type plain ProcInfo
	w := struct {
		*plain
		ID      fsops.RawString `json:"id"`
		Command fsops.RawString `json:"command"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	p.ID, p.Command = string(w.ID), string(w.Command)
	return nil
}

// MarshalJSON implements json.Marshaler: the ID is carried as bytes.
func (r ProcRequest) MarshalJSON() ([]byte, error) {
	type plain ProcRequest
	return json.Marshal(struct {
		plain
		ID fsops.RawString `json:"id,omitempty"`
	}{plain(r), fsops.RawString(r.ID)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *ProcRequest) UnmarshalJSON(data []byte) error {
	type plain ProcRequest
	w := struct {
		*plain
		ID fsops.RawString `json:"id,omitempty"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	r.ID = string(w.ID)
	return nil
}
