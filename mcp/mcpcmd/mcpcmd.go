// Package mcpcmd is the body of the sandbox-mcp command, for its mains:
// mcp/cmd/sandbox-mcp (Docker) and the k8s module's k8s/cmd/sandbox-mcp
// (Docker and Kubernetes). It takes the engines of the -engine flag from
// the main, so that this module does not import client-go. It is not an
// API for other programs: use package mcp (ServeStdio, NewHTTPHandler).
package mcpcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/byteflag"
	"github.com/dockersandbox/sandbox/internal/egressflag"
	"github.com/dockersandbox/sandbox/internal/engineflag"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/dockersandbox/sandbox/tools"
)

// Main runs sandbox-mcp with the command line args (without the program
// name) on the engine -engine names among engines, and exits with its
// status.
func Main(engines *engineflag.Set, args []string) {
	// A broken stdout or stderr must end the process through its cleanup,
	// not kill it with SIGPIPE: writes fail with EPIPE instead.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(Run(engines, args, &dropOnError{w: os.Stderr}))
}

// dropOnError writes to w until a write fails (stderr closed), then drops
// everything and reports success: a log line or a pull's progress must
// not fail because nobody reads them.
type dropOnError struct {
	mu     sync.Mutex
	w      io.Writer
	failed bool
}

func (d *dropOnError) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.failed {
		if _, err := d.w.Write(p); err != nil {
			d.failed = true
		}
	}
	return len(p), nil
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// Run runs sandbox-mcp with args, logging to stderr, and returns its exit
// status: 0 after a clean end (or -h), 1 when serving failed, 2 on bad
// usage.
func Run(engines *engineflag.Set, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("sandbox-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sandbox-mcp [flags]\n\n"+
			"An MCP server giving an agent a Docker sandbox (tools: ls, read_file, write_file,\n"+
			"edit_file, glob, grep, execute, delete; with -exec-tools also exec_command,\n"+
			"write_stdin, list_sessions, kill_session). Over stdio one sandbox lives for the\n"+
			"process; over streamable HTTP each MCP session gets its own.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	choice := engines.AddFlags(fs)
	egressChoice := egressflag.AddFlags(fs)
	var (
		transport   = fs.String("transport", "stdio", "`transport`: stdio or http")
		addr        = fs.String("addr", "127.0.0.1:8080", "HTTP listen `address` (loopback by default; there is no authentication)")
		path        = fs.String("path", "/mcp", "HTTP `path` of the MCP endpoint")
		image       = fs.String("image", sandbox.DefaultImage, "sandbox `image`")
		pull        = fs.String("pull", "missing", "`policy`: when to pull the image: missing, always or never")
		network     = fs.String("network", "", "container network `mode`: none, bridge, host, a network name (default Docker's: bridge)")
		cpus        = fs.Float64("cpus", 0, "CPU limit, in `CPUs` (e.g. 0.5; 0: none)")
		pids        = fs.Int64("pids", 0, "process count `limit` (0: none)")
		workdir     = fs.String("workdir", sandbox.DefaultWorkingDir, "working `directory` in the sandbox")
		user        = fs.String("user", "", "`user` for the container and every operation (default: the image's)")
		execTimeout = fs.Duration("exec-timeout", sandbox.DefaultExecuteTimeout, "default timeout of the execute tool, at most -max-exec-timeout")
		maxExec     = fs.Duration("max-exec-timeout", tools.DefaultMaxExecuteTimeout, "longest a command may run: a larger `timeout` from the model is refused, timeout 0 means this maximum")
		idle        = fs.Duration("idle-timeout", sandboxmcp.DefaultIdleTimeout, "HTTP: end a session and remove its sandbox after this long without a request (0: never)")
		maxSessions = fs.Int("max-sessions", sandboxmcp.DefaultMaxSessions, "HTTP: most MCP sessions (each with its sandbox) open at once; more are answered HTTP 503 (0: no limit)")
		execTools   = fs.Bool("exec-tools", false, "also serve the session tools exec_command, write_stdin, list_sessions and kill_session (OpenAI Codex's unified exec shape): long-running commands, REPLs on a tty")
		evictTokens = fs.Int("evict-tokens", tools.DefaultEvictTokens, "a tool result over this many tokens (4 characters each) is saved in the sandbox under -evict-dir and the model gets a preview of its head and tail and the path, as deepagents evicts it (0: off)")
		evictDir    = fs.String("evict-dir", tools.DefaultEvictDir, "where evicted results are saved in the sandbox")
		capture     = fs.Bool("capture-output", false, "execute keeps a command's whole output (up to 10 MiB) in the file its evicted result would have, as it streams: the model sees the tail of a large output, not only its head (deepagents' enable_capture_offload)")
		verbose     = fs.Bool("v", false, "log debug messages, the MCP SDK's included")
		memory      byteflag.Size
		env, labels listFlag
	)
	fs.Var(&memory, "memory", "memory `limit`, in bytes or with a unit: 512m, 2g (default none)")
	fs.Var(&env, "env", "set `KEY=value` in the sandbox's environment (repeatable)")
	fs.Var(&labels, "label", "put the label `key=value` on the sandbox containers (repeatable)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "sandbox-mcp: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected arguments: %q", fs.Args())
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := sandboxmcp.Config{
		Image:        *image,
		NetworkMode:  *network,
		Memory:       int64(memory),
		CPUs:         *cpus,
		PidsLimit:    *pids,
		WorkingDir:   *workdir,
		User:         *user,
		Env:          env,
		ExecTools:    *execTools,
		Logger:       log,
		PullProgress: stderr,
	}
	if *verbose {
		cfg.SDKLogger = log.With("component", "mcp-sdk")
	}
	switch *pull {
	case "missing":
		cfg.PullPolicy = sandbox.PullMissing
	case "always":
		cfg.PullPolicy = sandbox.PullAlways
	case "never":
		cfg.PullPolicy = sandbox.PullNever
	default:
		return usage("-pull %q: want missing, always or never", *pull)
	}
	switch {
	case *maxExec <= 0:
		return usage("-max-exec-timeout %v must be positive", *maxExec)
	case *execTimeout < 0:
		return usage("-exec-timeout %v is negative", *execTimeout)
	case *execTimeout == 0:
		return usage("-exec-timeout 0 (no timeout) would let commands run past -max-exec-timeout %v: give a duration up to it", *maxExec)
	case *execTimeout > *maxExec:
		return usage("-exec-timeout %v is above -max-exec-timeout %v: lower it or raise the maximum", *execTimeout, *maxExec)
	}
	cfg.ExecuteTimeout = *execTimeout
	cfg.Tools.MaxExecuteTimeout = *maxExec
	switch {
	case *evictTokens < 0:
		return usage("-evict-tokens %d is negative (0 turns eviction off)", *evictTokens)
	case *evictTokens == 0:
		cfg.Tools.EvictTokens = -1 // off
	default:
		cfg.Tools.EvictTokens = *evictTokens
	}
	if !strings.HasPrefix(*evictDir, "/") {
		return usage("-evict-dir %q: want an absolute path in the sandbox", *evictDir)
	}
	cfg.Tools.EvictDir = *evictDir
	if *capture && *evictTokens == 0 {
		return usage("-capture-output needs eviction on (-evict-tokens above 0)")
	}
	cfg.Tools.CaptureOutput = *capture
	switch {
	case *maxSessions < 0:
		return usage("-max-sessions %d is negative", *maxSessions)
	case *maxSessions == 0:
		cfg.MaxSessions = -1 // no limit
	default:
		cfg.MaxSessions = *maxSessions
	}
	switch {
	case *idle < 0:
		return usage("-idle-timeout %v is negative", *idle)
	case *idle == 0:
		cfg.IdleTimeout = -1 // never
	default:
		cfg.IdleTimeout = *idle
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return usage("-label %q: want key=value", l)
		}
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[k] = v
	}
	if !strings.HasPrefix(*path, "/") {
		return usage("-path %q must start with /", *path)
	}
	egress, err := egressChoice.Policy(os.Getenv, func(ev sandbox.EgressEvent) {
		log.Info("egress", "allowed", ev.Allowed, "method", ev.Method, "host", ev.Host, "port", ev.Port,
			"rule", ev.Rule, "reason", ev.Reason, "sent", ev.Sent, "received", ev.Received, "duration", ev.Duration)
	})
	if err != nil {
		return usage("%v", err)
	}
	cfg.Egress = egress
	if err := cfg.Validate(); err != nil {
		return usage("%v", err)
	}
	engOpts, eng, err := choice.Open(context.Background())
	switch {
	case errors.Is(err, engineflag.ErrUnknown):
		return usage("%v", err)
	case err != nil:
		fmt.Fprintf(stderr, "sandbox-mcp: %v\n", err)
		return 1
	case eng != nil && *network != "" && *network != "none":
		eng.Close()
		return usage("-network %q: %v: Docker only, not on the %s engine", *network, sandbox.ErrInvalidOption, eng.Name())
	case eng != nil && *pull != "missing":
		eng.Close()
		return usage("-pull %q: %v: Docker only, not on the %s engine (the node pulls, as its image pull policy says)", *pull, sandbox.ErrInvalidOption, eng.Name())
	case eng != nil: // the pull is the node's, not Docker's: no progress to show
		defer eng.Close() // after every sandbox is removed (Serve* return then)
		cfg.SandboxOptions = append(cfg.SandboxOptions, engOpts...)
		cfg.PullProgress = nil
	}

	// The first SIGINT, SIGTERM or SIGHUP shuts down cleanly, removing
	// every sandbox (within the bounds of sandboxmcp's removals); after it
	// the default handling is back, so a second one kills the process at
	// once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	context.AfterFunc(ctx, stop)

	switch *transport {
	case "stdio":
		err = sandboxmcp.ServeStdio(ctx, cfg)
	case "http":
		err = serveHTTP(ctx, cfg, *addr, *path, log)
	default:
		return usage("-transport %q: want stdio or http", *transport)
	}
	if err != nil {
		log.Error("sandbox-mcp failed", "error", err)
		return 1
	}
	return 0
}

// shutdownTimeout bounds the HTTP server's graceful shutdown.
const shutdownTimeout = 10 * time.Second

func serveHTTP(ctx context.Context, cfg sandboxmcp.Config, addr, path string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		log.Warn("listening on a non-loopback address: anyone who can reach it can run commands in sandboxes on this Docker daemon, and there is no authentication",
			"addr", ln.Addr().String())
	}
	h := sandboxmcp.NewHTTPHandler(cfg)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+path)

	select {
	case err = <-served:
		return errors.Join(err, h.Close())
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Sandboxes and sessions first: a session's event stream is a request
	// that stays open until the session ends, and Shutdown waits for it.
	err = h.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		log.Warn("HTTP shutdown", "error", serr)
		srv.Close()
	}
	return err
}
