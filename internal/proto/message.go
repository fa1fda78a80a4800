package proto

import (
	"time"

	"github.com/dockersandbox/sandbox/internal/fsops"
)

// Hello is the helper's first frame.
type Hello struct {
	Version int `json:"version"`
	// Session is the helper's session ID (its pid: it leads the session),
	// which the commands it runs share; 0 when it could not have one.
	Session int    `json:"session,omitempty"`
	UID     int    `json:"uid"`
	GID     int    `json:"gid"`
	Arch    string `json:"arch"`
	// TTY: the helper runs commands on a terminal (Request.TTY,
	// KindResize). Caps says so too (CapTTY); TTY stays for the libraries
	// that predate Caps.
	TTY bool `json:"tty,omitempty"`
	// Caps lists what the helper has beyond the version 2 baseline (see
	// Capability): what the library may send it.
	Caps []Capability `json:"caps,omitempty"`
}

// Operations a Request can name.
const (
	OpExec    = "exec"
	OpRead    = "read"
	OpWrite   = "write"
	OpEdit    = "edit"
	OpLs      = "ls"
	OpGlob    = "glob"
	OpGrep    = "grep"
	OpDelete  = "delete"
	OpStat    = "stat"    // batch: Paths → Stats (download preflight)
	OpPrepare = "prepare" // batch: Paths → Stats, parents created (upload preflight)
	OpRename  = "rename"  // Path renamed to New (finishes an atomic upload)
	OpCat     = "cat"     // Path's bytes from Offset as Stdout frames, at most Limit+1 of them
	OpInfo    = "info"    // Path's FileInfo, symlinks followed, as Entries[0]
	OpKill    = "kill"    // the running commands of the helper leading Session, and that helper
)

// Request asks the helper to do one thing. Fields are used per Op.
type Request struct {
	Op string `json:"op"`

	// exec
	Command  string   `json:"command,omitempty"`
	Env      []string `json:"env,omitempty"`
	Dir      string   `json:"dir,omitempty"`
	Timeout  int64    `json:"timeout_ms,omitempty"` // 0 = none
	Combined bool     `json:"combined,omitempty"`   // stderr into the stdout stream
	Stdin    bool     `json:"stdin,omitempty"`      // Input frames feed the command
	TTY      *Winsize `json:"tty,omitempty"`        // run on a terminal of this size (see KindResize)
	Capture  *Capture `json:"capture,omitempty"`    // also keep the output in a file (Combined only)

	// kill
	Session int `json:"session,omitempty"`

	// dial (Network, Address), watch (Path, Recursive)
	Network   string `json:"network,omitempty"`
	Address   string `json:"address,omitempty"`
	Recursive bool   `json:"recursive,omitempty"`
	// dial: a unix socket (a path in the sandbox) of the library's to
	// carry the connection over instead of the stream, introduced with
	// Token (hex); see StreamOpen.Direct.
	Direct string `json:"direct,omitempty"`
	Token  string `json:"token,omitempty"`

	// files
	Path       string   `json:"path,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	Offset     int      `json:"offset,omitempty"`
	Limit      int      `json:"limit,omitempty"`
	Old        string   `json:"old,omitempty"`
	New        string   `json:"new,omitempty"`
	ReplaceAll bool     `json:"replace_all,omitempty"`
	Pattern    string   `json:"pattern,omitempty"`
	Glob       string   `json:"glob,omitempty"`
	MaxCount   int      `json:"max_count,omitempty"`

	Proc *ProcRequest `json:"proc,omitempty"` // process operations (process.go)
}

// TimeoutExitCode is the exit code of a command killed by its timeout.
const TimeoutExitCode = 124

// Result answers a Request. Error is set when the operation failed.
type Result struct {
	Error *Error `json:"error,omitempty"`

	// exec
	ExitCode  int  `json:"exit_code"`
	TimedOut  bool `json:"timed_out,omitempty"`
	OOMKilled bool `json:"oom_killed,omitempty"` // SIGKILLed by the kernel's OOM killer

	Read      *fsops.ReadResult     `json:"read,omitempty"`
	Entries   List[fsops.FileInfo]  `json:"entries,omitempty"`
	Matches   List[fsops.GrepMatch] `json:"matches,omitempty"`
	Count     int                   `json:"count,omitempty"`
	Truncated bool                  `json:"truncated,omitempty"`
	Stats     List[Stat]            `json:"stats,omitempty"`
	UID       int                   `json:"uid,omitempty"`    // prepare: who the helper runs as
	Offset    int64                 `json:"offset,omitempty"` // cat: where it began (a helper without ranged cat leaves it 0)
	GID       int                   `json:"gid,omitempty"`

	Proc  *ProcResult    `json:"proc,omitempty"`  // process operations (process.go)
	Procs List[ProcInfo] `json:"procs,omitempty"` // proc_list

	Captured *Captured `json:"captured,omitempty"` // exec with a Capture
}

// Capture asks an exec to write its combined output, as it streams, to
// the file Path in the sandbox (created or truncated, its directory made)
// up to Max bytes.
type Capture struct {
	Path fsops.RawString `json:"path"` // bytes, as a Request's paths
	Max  int64           `json:"max"`
}

// MaxCaptureTail is the most Captured.Tail holds.
const MaxCaptureTail = 4096

// Captured is what an exec kept in its Capture's file.
type Captured struct {
	Size  int64           `json:"size"`            // bytes in the file
	Total int64           `json:"total"`           // bytes the command wrote (above Size when capped)
	Lines int64           `json:"lines"`           // newlines in the file
	Tail  []byte          `json:"tail,omitempty"`  // the file's last bytes, at most MaxCaptureTail
	Error fsops.RawString `json:"error,omitempty"` // why the file is short of min(Total, Max), if it is (it may name the path)
}

// Stat is the helper's view of one path in a batch, as the sandbox user sees it.
type Stat struct {
	Error    *Error    `json:"error,omitempty"`
	Resolved string    `json:"resolved,omitempty"` // symlinks resolved
	IsDir    bool      `json:"is_dir,omitempty"`
	Size     int64     `json:"size,omitempty"`
	ModTime  time.Time `json:"mtime,omitzero"`
}
