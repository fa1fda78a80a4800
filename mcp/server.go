package sandboxmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the version the server reports to its clients.
const Version = "0.1.0"

// sessionCloseTimeout bounds the wait for an MCP session to close once its
// sandbox is gone (closing waits for the calls in flight, which fail fast
// then).
const sessionCloseTimeout = 5 * time.Second

// NewServer returns an MCP server with no tools yet, named and configured
// for the sandbox tools: it advertises the tools capability only.
func NewServer(cfg Config) *mcp.Server {
	return newServer(&cfg)
}

func newServer(cfg *Config) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{
		Name:    "dockersandbox",
		Title:   "Docker sandbox",
		Version: Version,
	}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("The tools work in an isolated Docker container: "+
			"execute runs shell commands there, the file tools read and change its files. "+
			"Relative paths resolve against %s.", cfg.workingDir()),
		Logger:       cfg.SDKLogger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		// The same versions over stdio and HTTP (see ProtocolVersions).
		SupportedProtocolVersions: ProtocolVersions(),
	})
}

// ProtocolVersions returns the MCP protocol versions the server accepts,
// newest first, over stdio and HTTP alike: those of the SDK that have
// sessions (up to 2025-11-25). Protocol version 2026-07-28 has none over
// HTTP, and this server gives each MCP session its own sandbox; a client
// that asks for it (server/discover) is told these versions and falls back
// to the initialize handshake, as the SDK's and mark3labs/mcp-go's
// clients do.
func ProtocolVersions() []string {
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < sessionlessProtocol {
			out = append(out, v)
		}
	}
	return out
}

// sessionlessProtocol is the first MCP protocol version without sessions.
const sessionlessProtocol = "2026-07-28"

// sandboxCloseTimeout bounds the wait for a sandbox's removal when a
// session or the server ends, whatever the container or the daemon does
// (the library's Close has its own, shorter bound).
const sandboxCloseTimeout = 45 * time.Second

// NewSandbox creates a sandbox as cfg says, after cfg.Validate.
func NewSandbox(ctx context.Context, cfg Config) (*sandbox.Sandbox, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return sandbox.New(ctx, cfg.sandboxOptions()...)
}

// closeSandbox removes sb, waiting sandboxCloseTimeout at most: past it,
// the removal goes on in the background and the error says so.
func closeSandbox(sb *sandbox.Sandbox) error {
	done := make(chan error, 1)
	go func() { done <- sb.Close() }()
	timer := time.NewTimer(sandboxCloseTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("sandboxmcp: removing sandbox %s did not finish within %v; if it is left, `sandbox prune -dead-owners` removes it once this process has exited", sb.ID(), sandboxCloseTimeout)
	}
}

// NewStdioServer creates a sandbox and a server that serves its tools. The
// caller runs the server and closes the sandbox; Serve does both.
func NewStdioServer(ctx context.Context, cfg Config) (*mcp.Server, *sandbox.Sandbox, error) {
	sb, err := NewSandbox(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	server := newServer(&cfg)
	addTools(server, sb, cfg.Tools, cfg.networked())
	if cfg.ExecTools {
		addExecTools(server, sb, cfg.Tools, cfg.networked())
	}
	return server, sb, nil
}

// ServeStdio is Serve over standard input and output. The sandbox is
// removed as soon as standard input ends, even with calls in flight (which
// then fail at once): the client is gone.
func ServeStdio(ctx context.Context, cfg Config) error {
	in := &endReader{r: os.Stdin, ended: make(chan struct{})}
	return serve(ctx, cfg, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{os.Stdout}}, in.ended)
}

// Serve serves one client over t with one sandbox: it creates the sandbox
// (before reading anything from t, so a failure is reported before the
// client is answered), serves its tools until the client disconnects or
// ctx ends, and removes the sandbox. When ctx ends, the sandbox is removed
// first, so that calls in flight end at once, then the session is closed.
// It returns nil after a disconnection or the end of ctx, and the error of
// the sandbox's creation or removal otherwise.
func Serve(ctx context.Context, cfg Config, t mcp.Transport) error {
	return serve(ctx, cfg, t, nil)
}

// serve is Serve; inputEnded, if not nil, is closed when the client's
// input ends, which may be before the session ends (the session waits for
// the calls in flight).
func serve(ctx context.Context, cfg Config, t mcp.Transport, inputEnded <-chan struct{}) (err error) {
	log := cfg.logger()
	server, sb, err := NewStdioServer(ctx, cfg)
	if err != nil {
		return err
	}
	log.Info("sandbox created", "sandbox", sb.ID(), "image", imageName(&cfg))
	var once sync.Once
	removeSandbox := func(why string) {
		once.Do(func() {
			if cerr := closeSandbox(sb); cerr != nil {
				log.Error("removing sandbox", "sandbox", sb.ID(), "error", cerr)
				err = errors.Join(err, cerr)
				return
			}
			log.Info("sandbox removed", "sandbox", sb.ID(), "reason", why)
		})
	}

	ss, err := server.Connect(ctx, t, nil)
	if err != nil {
		removeSandbox("connection failed")
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	// waitEnded waits, a few seconds at most, for the session to end once
	// the sandbox is gone.
	waitEnded := func() {
		select {
		case <-ended:
		case <-time.After(sessionCloseTimeout):
			log.Warn("session did not close in time")
		}
	}
	select {
	case werr := <-ended:
		if werr != nil && !errors.Is(werr, mcp.ErrConnectionClosed) {
			log.Info("connection ended", "error", werr)
		}
		removeSandbox("client disconnected")
	case <-inputEnded:
		removeSandbox("client disconnected")
		waitEnded()
	case <-ctx.Done():
		removeSandbox("shutdown")
		go ss.Close()
		waitEnded()
	}
	return err
}

// endReader is a reader that closes ended when its Read fails (end of
// input, or any error).
type endReader struct {
	r     io.ReadCloser
	once  sync.Once
	ended chan struct{}
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}

func (e *endReader) Close() error { return e.r.Close() }

// nopWriteCloser is a writer whose Close does nothing: standard output
// stays open.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func imageName(cfg *Config) string {
	if cfg.Image != "" {
		return cfg.Image
	}
	return sandbox.DefaultImage
}

// describeOnly is a tools.Sandbox that only knows its working directory:
// enough for tools.New to describe the tools, never called.
type describeOnly struct {
	tools.Sandbox // nil: calling any other method panics
	wd            string
}

func (d describeOnly) WorkingDir() string { return d.wd }
