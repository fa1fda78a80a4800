package sandboxmcp

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/tools"
)

// DefaultIdleTimeout is how long an HTTP session may stay without a
// request before it is closed and its sandbox removed.
const DefaultIdleTimeout = 15 * time.Minute

// DefaultMaxSessions is how many MCP sessions (each with at most one
// sandbox) the HTTP handler serves at once by default.
const DefaultMaxSessions = 64

// Config configures the sandboxes the server creates and the tools it
// serves. Zero values mean the library's defaults.
type Config struct {
	// Image is the sandbox image; "" means sandbox.DefaultImage.
	Image string
	// PullPolicy says when the image is pulled (default sandbox.PullMissing).
	PullPolicy sandbox.PullPolicy
	// PullProgress, if set, receives image pull progress lines.
	PullProgress io.Writer
	// NetworkMode is the container network ("none", "bridge", "host", a
	// network name); "" means Docker's default (bridge).
	NetworkMode string
	// Egress, if not nil, gives every sandbox this egress policy (see
	// sandbox.EgressPolicy): no network of its own, a proxy that goes where
	// the policy allows. It excludes a NetworkMode other than "none".
	Egress *sandbox.EgressPolicy
	// Memory limits the container's memory, in bytes; 0 means no limit.
	Memory int64
	// CPUs limits CPU time, in CPUs (e.g. 0.5); 0 means no limit.
	CPUs float64
	// PidsLimit limits the number of processes; 0 means no limit.
	PidsLimit int64
	// WorkingDir is where commands run and relative paths resolve; ""
	// means sandbox.DefaultWorkingDir.
	WorkingDir string
	// User runs the container and every operation as this user; "" means
	// the image's user.
	User string
	// Env adds environment variables ("KEY=value") to the container.
	Env []string
	// Labels adds container labels (keys under "com.dockersandbox." are
	// reserved by the library).
	Labels map[string]string
	// ExecuteTimeout is the execute tool's default timeout: 0 means
	// sandbox.DefaultExecuteTimeout, a negative value means none. It must
	// not exceed Tools.MaxExecuteTimeout (none exceeds every maximum):
	// Validate and the sandbox's creation refuse it.
	ExecuteTimeout time.Duration
	// SandboxOptions are passed to sandbox.New after the options the
	// fields above make, so they can override them.
	SandboxOptions []sandbox.Option

	// Tools configures the tool set (zero: the tools package's defaults).
	Tools tools.Options
	// ExecTools adds the session tools of tools.NewExec (exec_command,
	// write_stdin, list_sessions, kill_session) to the eight.
	ExecTools bool

	// IdleTimeout closes an HTTP session, and removes its sandbox, after
	// this long without a message from its client (a call in progress
	// counts as activity): 0 means
	// DefaultIdleTimeout, a negative value means never. Stdio ignores it.
	IdleTimeout time.Duration

	// MaxSessions caps the HTTP sessions open at once: a client that
	// would open one more is answered HTTP 503 with a JSON-RPC error that
	// says so. 0 means DefaultMaxSessions, a negative value means no cap.
	// Stdio ignores it.
	MaxSessions int

	// Logger receives the server's own log (sandboxes created and
	// removed, sessions ended); nil means slog.Default(). Never use
	// stdout with the stdio transport.
	Logger *slog.Logger
	// SDKLogger, if set, receives the MCP SDK's log.
	SDKLogger *slog.Logger
}

// sandboxOptions returns the options of sandbox.New for c.
func (c *Config) sandboxOptions() []sandbox.Option {
	var o []sandbox.Option
	if c.Image != "" {
		o = append(o, sandbox.WithImage(c.Image))
	}
	o = append(o, sandbox.WithPullPolicy(c.PullPolicy))
	if c.PullProgress != nil {
		o = append(o, sandbox.WithPullProgress(c.PullProgress))
	}
	if c.NetworkMode != "" {
		o = append(o, sandbox.WithNetworkMode(c.NetworkMode))
	}
	if c.Egress != nil {
		o = append(o, sandbox.WithEgress(*c.Egress))
	}
	if c.Memory != 0 {
		o = append(o, sandbox.WithMemory(c.Memory))
	}
	if c.CPUs != 0 {
		o = append(o, sandbox.WithCPUs(c.CPUs))
	}
	if c.PidsLimit != 0 {
		o = append(o, sandbox.WithPidsLimit(c.PidsLimit))
	}
	if c.WorkingDir != "" {
		o = append(o, sandbox.WithWorkingDir(c.WorkingDir))
	}
	if c.User != "" {
		o = append(o, sandbox.WithUser(c.User))
	}
	if len(c.Env) > 0 {
		o = append(o, sandbox.WithEnv(c.Env...))
	}
	if len(c.Labels) > 0 {
		o = append(o, sandbox.WithLabels(c.Labels))
	}
	switch {
	case c.ExecuteTimeout > 0:
		o = append(o, sandbox.WithExecuteTimeout(c.ExecuteTimeout))
	case c.ExecuteTimeout < 0:
		o = append(o, sandbox.WithExecuteTimeout(0))
	}
	return append(o, c.SandboxOptions...)
}

// Validate reports a configuration the server must not run with: a
// default execute timeout above the tool's maximum, or none while a
// maximum holds (the maximum would be no cap); an egress policy that
// cannot be parsed, or with another network mode. The error wraps
// sandbox.ErrInvalidOption.
func (c Config) Validate() error {
	maxTimeout := c.Tools.MaxExecuteTimeout
	if maxTimeout <= 0 {
		maxTimeout = tools.DefaultMaxExecuteTimeout
	}
	switch def := c.ExecuteTimeout; {
	case def < 0:
		return fmt.Errorf("%w: sandboxmcp: ExecuteTimeout is none (no timeout), but the execute tool's maximum is %v", sandbox.ErrInvalidOption, maxTimeout)
	case def == 0 && sandbox.DefaultExecuteTimeout > maxTimeout:
		return fmt.Errorf("%w: sandboxmcp: the default ExecuteTimeout (%v) exceeds Tools.MaxExecuteTimeout (%v)", sandbox.ErrInvalidOption, sandbox.DefaultExecuteTimeout, maxTimeout)
	case def > maxTimeout:
		return fmt.Errorf("%w: sandboxmcp: ExecuteTimeout %v exceeds Tools.MaxExecuteTimeout %v", sandbox.ErrInvalidOption, def, maxTimeout)
	}
	if c.Egress != nil {
		if c.NetworkMode != "" && c.NetworkMode != "none" {
			return fmt.Errorf("%w: sandboxmcp: an egress policy excludes NetworkMode %q", sandbox.ErrInvalidOption, c.NetworkMode)
		}
		if err := c.Egress.Validate(); err != nil {
			return fmt.Errorf("sandboxmcp: %w", err)
		}
	}
	return nil
}

func (c *Config) maxSessions() int {
	switch {
	case c.MaxSessions == 0:
		return DefaultMaxSessions
	case c.MaxSessions < 0:
		return 0
	}
	return c.MaxSessions
}

func (c *Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

func (c *Config) idleTimeout() time.Duration {
	switch {
	case c.IdleTimeout == 0:
		return DefaultIdleTimeout
	case c.IdleTimeout < 0:
		return 0
	}
	return c.IdleTimeout
}

// networked reports whether the sandboxes have a network (execute's
// openWorldHint): every mode but "none". A network mode that
// SandboxOptions set is not seen: the hint then says networked.
func (c *Config) networked() bool { return c.NetworkMode != "none" || c.Egress != nil }

func (c *Config) workingDir() string {
	if c.WorkingDir != "" {
		return c.WorkingDir
	}
	return sandbox.DefaultWorkingDir
}
