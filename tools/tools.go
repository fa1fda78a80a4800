package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dockersandbox/sandbox"
)

// Sandbox is what the tools use; *sandbox.Sandbox implements it.
type Sandbox interface {
	WorkingDir() string
	Execute(ctx context.Context, command string, opts ...sandbox.ExecOption) (sandbox.ExecuteResponse, error)
	Read(ctx context.Context, path string, opts ...sandbox.ReadOption) (sandbox.ReadResult, error)
	Write(ctx context.Context, path string, content []byte) error
	Edit(ctx context.Context, path, oldString, newString string, replaceAll bool) (int, error)
	Ls(ctx context.Context, path string) ([]sandbox.FileInfo, error)
	Glob(ctx context.Context, pattern, path string) (sandbox.GlobResult, error)
	Grep(ctx context.Context, pattern, path string, opts ...sandbox.GrepOption) (sandbox.GrepResult, error)
	Delete(ctx context.Context, path string) error
}

var _ Sandbox = (*sandbox.Sandbox)(nil)

// DefaultMaxExecuteTimeout is the default of Options.MaxExecuteTimeout,
// deepagents 0.7's.
const DefaultMaxExecuteTimeout = 3600 * time.Second

// Defaults of Options, as in deepagents 0.7's FilesystemMiddleware.
const (
	defaultMaxExecuteTimeout = DefaultMaxExecuteTimeout
	defaultGrepMaxCount      = 1000
	defaultGlobTimeout       = 10 * time.Second
)

// Options tune the tool set; zero values mean deepagents' defaults.
type Options struct {
	// MaxExecuteTimeout caps execute's `timeout` argument (default
	// 3600s): larger values are refused with deepagents' message, and 0
	// ("no timeout") means the maximum. The sandbox's own default timeout,
	// used when the argument is omitted, is the caller's to keep within it.
	MaxExecuteTimeout time.Duration
	GrepMaxCount      int           // default 1000
	GlobTimeout       time.Duration // default 10s (0.7)
	// MaxOutputBytes caps the command output in execute's text, counted
	// after escaping (sandbox.SafeText) in bytes of UTF-8; default
	// sandbox.DefaultMaxOutputBytes. A smaller cap of the sandbox
	// (sandbox.WithMaxOutputBytes) applies too, as its truncation marker
	// says. It also caps the output budget of the session tools (NewExec):
	// max_output_tokens × 4 bytes, at most MaxOutputBytes.
	MaxOutputBytes int

	// MaxSessions caps the sessions a NewExec tool set keeps open (running,
	// or exited with output not yet collected); default DefaultMaxSessions.
	MaxSessions int
	// MaxPollTime caps yield_time_ms of a write_stdin that only polls
	// (empty chars); default DefaultMaxPollTime, at least 5 s.
	MaxPollTime time.Duration

	// EvictTokens is deepagents' tool_token_limit_before_evict: a result
	// of more than EvictTokens×4 characters is written to the sandbox at
	// EvictDir/<tool call ID> (see WithCallID) and the model gets
	// deepagents' message with the path and a preview of the head and
	// tail, to page with read_file. ls, read_file, write_file, edit_file,
	// glob, grep and delete are never evicted. Default DefaultEvictTokens
	// (80,000 characters); negative turns eviction off. A result whose
	// file cannot be written stays inline.
	EvictTokens int
	// EvictDir is where evicted results go; default DefaultEvictDir. On a
	// read-only root file system (sandbox.WithSecureProfile) give a
	// writable one.
	EvictDir string
	// CaptureOutput is deepagents' enable_capture_offload: execute keeps
	// the command's whole output, as it streams, in the file its evicted
	// result would have (sandbox.ExecCapture), up to MaxCaptureBytes. An
	// output of at most EvictTokens×4 bytes comes back inline and the file
	// goes; a larger one is deepagents' status line and a head-and-tail
	// preview of the file, with its path, whatever the output cap. Off by
	// default, as in deepagents; it needs eviction on.
	CaptureOutput bool
	// MaxCaptureBytes caps the file of CaptureOutput; default
	// sandbox.DefaultCaptureBytes (10 MiB).
	MaxCaptureBytes int64
}

// withDefaults replaces zero (and negative) values by the defaults.
func (o Options) withDefaults() Options {
	if o.MaxExecuteTimeout <= 0 {
		o.MaxExecuteTimeout = defaultMaxExecuteTimeout
	}
	if o.GrepMaxCount <= 0 {
		o.GrepMaxCount = defaultGrepMaxCount
	}
	if o.GlobTimeout <= 0 {
		o.GlobTimeout = defaultGlobTimeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = sandbox.DefaultMaxOutputBytes
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxPollTime <= 0 {
		o.MaxPollTime = DefaultMaxPollTime
	}
	o.MaxPollTime = max(o.MaxPollTime, minPollYield)
	if o.EvictTokens == 0 {
		o.EvictTokens = DefaultEvictTokens
	}
	if o.EvictDir == "" {
		o.EvictDir = DefaultEvictDir
	}
	if o.MaxCaptureBytes <= 0 {
		o.MaxCaptureBytes = sandbox.DefaultCaptureBytes
	}
	return o
}

// Tool is one agent tool.
type Tool struct {
	Name        string
	Description string          // written for a model
	InputSchema json.RawMessage // hand-written JSON Schema (type object, properties, required, additionalProperties false)

	run func(ctx context.Context, a *args) Result
}

// Call runs the tool on raw JSON arguments. It never panics; bad arguments
// and backend failures come back as a Result with IsError set.
func (t Tool) Call(ctx context.Context, args json.RawMessage) Result {
	return t.call(ctx, args)
}

// call is Call, with the recovery that keeps a bug from panicking the caller.
func (t Tool) call(ctx context.Context, raw json.RawMessage) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = errorf("Error: internal error in tool %s: %v", t.Name, r)
		}
	}()
	if t.run == nil {
		return errorf("Error: tool %q is not bound to a sandbox; get tools from New", t.Name)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	a, bad := parseArgs(t.Name, raw)
	if bad != nil {
		return *bad
	}
	return t.run(ctx, a)
}

// Result is what the model sees.
type Result struct {
	Text     string
	IsError  bool
	Media    *Media // read_file of an image, audio, video or PDF file; Text then says what it is
	ExitCode *int   // execute: the command's exit code (deepagents' artifact)
}

// Media is a file returned to the model as base64 data.
type Media struct {
	Type     string // "image", "audio", "video" or "file"
	MIMEType string
	Data     string // base64
}

// text returns a successful Result.
func text(s string) Result { return Result{Text: s} }

// errorText returns a failed Result.
func errorText(s string) Result { return Result{Text: s, IsError: true} }

// errorf returns a failed Result with a formatted text.
func errorf(format string, a ...any) Result { return errorText(fmt.Sprintf(format, a...)) }

// New returns the tools bound to sb, in deepagents' order: ls, read_file,
// write_file, edit_file, glob, grep, execute, delete.
func New(sb Sandbox, opts Options) []Tool {
	e := &env{sb: sb, opts: opts.withDefaults(), wd: "/"}
	if sb != nil && sb.WorkingDir() != "" {
		e.wd = sb.WorkingDir()
	}
	defs := []struct {
		name, description, schema string
		run                       func(*env, context.Context, *args) Result
	}{
		{"ls", lsDescription, lsSchema, (*env).ls},
		{"read_file", readDescription, readSchema, (*env).readFile},
		{"write_file", writeDescription, writeSchema, (*env).writeFile},
		{"edit_file", editDescription, editSchema, (*env).editFile},
		{"glob", globDescription, globSchema, (*env).glob},
		{"grep", grepDescription, grepSchema, (*env).grep},
		{"execute", executeDescription, executeSchema, (*env).execute},
		{"delete", deleteDescription, deleteSchema, (*env).delete},
	}
	out := make([]Tool, len(defs))
	for i, d := range defs {
		run, name := d.run, d.name
		out[i] = Tool{
			Name:        d.name,
			Description: e.fill(d.description),
			InputSchema: e.schema(d.schema),
			run: func(ctx context.Context, a *args) Result {
				if e.sb == nil {
					return errorText("Error: no sandbox is attached to this tool")
				}
				ctx, id := callID(ctx)
				return evict(ctx, e.sb, e.opts, name, id, run(e, ctx, a))
			},
		}
	}
	return out
}

// Lookup finds a tool by name in a slice returned by New.
func Lookup(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// env is what the handlers of one tool set share.
type env struct {
	sb   Sandbox
	opts Options
	wd   string // the working directory at New time
}
