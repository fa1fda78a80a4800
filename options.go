package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/docker"
	"github.com/dockersandbox/sandbox/internal/egress"
	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of New.
const (
	// DefaultImage is the image used when WithImage is not given.
	DefaultImage = "python:3.13-slim"
	// DefaultWorkingDir is the sandbox's working directory.
	DefaultWorkingDir = "/workspace"
	// DefaultExecuteTimeout bounds a command when Execute is not told otherwise.
	DefaultExecuteTimeout = 120 * time.Second
	// DefaultMaxOutputBytes caps the output Execute returns.
	DefaultMaxOutputBytes = 500 * 1024
	// DefaultMaxDownloadBytes caps one file of DownloadFiles.
	DefaultMaxDownloadBytes = 1 << 30
)

// An Option configures New, and some of them Attach, List, Prune and the
// snapshot functions: each option's doc says where it applies beyond New.
// An invalid value, or an option given to a call it does not apply to
// (New(ctx, WithStart()), say), makes the call fail with ErrInvalidOption
// before any container exists.
type Option func(*options) error

// PullPolicy says when New pulls the image.
type PullPolicy int

const (
	// PullMissing pulls the image only when the daemon does not have it (default).
	PullMissing PullPolicy = iota
	// PullAlways pulls the image every time.
	PullAlways
	// PullNever never pulls; a missing image is ErrImageNotFound.
	PullNever
)

// Ulimit is one resource limit for processes in the sandbox (see ulimit(1)).
type Ulimit struct {
	Name       string // e.g. "nofile", "nproc", "core"
	Soft, Hard int64
}

type options struct {
	image          string
	name           string
	binds          []string
	workingDir     string
	autoRemove     bool
	directPorts    bool // WithDirectPorts
	executeTimeout time.Duration
	maxOutputBytes int
	clientOpts     []client.Opt
	client         *client.Client
	networkMode    string
	egress         *EgressPolicy  // WithEgress (egress.go)
	egressPolicy   *egress.Policy // and parsed
	dns            []netip.Addr
	gpus           int // 0 none, -1 all
	env            []string
	labels         map[string]string
	user           string
	memory         int64
	nanoCPUs       int64
	pidsLimit      int64
	shmSize        int64
	devices        []container.DeviceMapping
	ulimits        []*container.Ulimit
	readOnlyRootfs bool
	capDrop        []string
	runtime        string
	pullPolicy     PullPolicy
	pullProgress   io.Writer
	configure      []func(*container.Config, *container.HostConfig)
	noChannel      bool
	maxDownload    int64
	lifetime       time.Duration
	idleTimeout    time.Duration
	secure         bool
	owner          string
	snap           snapshotFrom         // WithSnapshot (snapshot.go)
	durable        durableOptions       // lifecycle.go
	procsIdle      bool                 // WithProcessKeepAlive(false) (process.go)
	engine         engine.Engine        // WithEngine (engine_option.go)
	audit          slog.Handler         // WithAudit (observe.go)
	tracerProvider trace.TracerProvider // WithTracerProvider
	redact         Redact               // WithRedact
	obs            *observer            // from the three, made by newOptions
	used           []optionUse          // the options given, for the check that each applies
	// helperBinary returns the helper to install for an architecture;
	// nil: the committed one (helperbin.For). Only tests set it (a helper
	// built with the sandboxtest tag).
	helperBinary func(arch string) ([]byte, error)
}

// A call is a function options are given to, for the check that each
// option applies to it.
type call uint8

const (
	callNew    call = 1 << iota // New, Fork, a Pool's sandboxes
	callAttach                  // Attach
	callEngine                  // List, Prune and the snapshot functions
	callAny    = callNew | callAttach | callEngine
)

// optionUse records one option given: its name and the calls it applies to.
type optionUse struct {
	name  string
	calls call
}

// use records that the option name was given; it applies to calls.
func (o *options) use(name string, calls call) {
	o.used = append(o.used, optionUse{name, calls})
}

// callNames names the functions of each call, for errors.
var callNames = map[call]string{callNew: "New", callAttach: "Attach", callEngine: "List, Prune and the snapshot functions"}

func defaults() *options {
	return &options{
		image:          DefaultImage,
		workingDir:     DefaultWorkingDir,
		autoRemove:     true,
		directPorts:    true,
		executeTimeout: DefaultExecuteTimeout,
		maxOutputBytes: DefaultMaxOutputBytes,
		maxDownload:    DefaultMaxDownloadBytes,
	}
}

func init() {
	testhook.WithHelperBinary = func(bin func(arch string) ([]byte, error)) any {
		return Option(func(o *options) error {
			o.helperBinary = bin
			return nil
		})
	}
}

// helperFor returns the helper binary to install for arch.
func (o *options) helperFor(arch string) ([]byte, error) {
	if o.helperBinary != nil {
		return o.helperBinary(arch)
	}
	return helperbin.For(arch)
}

// newOptions applies opts, given to fn (one of the call kinds c), and
// validates them: an option that does not apply to c is ErrInvalidOption.
func newOptions(opts []Option, c call, fn string) (*options, error) {
	o := defaults()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	for _, u := range o.used {
		if u.calls&c == 0 {
			var to []string
			for _, k := range []call{callNew, callAttach, callEngine} {
				if u.calls&k != 0 {
					to = append(to, callNames[k])
				}
			}
			return nil, fmt.Errorf("%w: %s does not apply to %s (it applies to %s)", ErrInvalidOption, u.name, fn, strings.Join(to, ", "))
		}
	}
	if o.client != nil && len(o.clientOpts) > 0 {
		return nil, fmt.Errorf("%w: WithClient and WithClientOptions exclude each other", ErrInvalidOption)
	}
	if err := o.checkEngine(); err != nil {
		return nil, err
	}
	if o.gvisor() && o.pidsLimit > 0 && o.pidsLimit < minGVisorPids {
		return nil, fmt.Errorf("%w: WithPidsLimit(%d) under gVisor: %s", ErrInvalidOption, o.pidsLimit, gvisorPidsWhy)
	}
	if o.egress != nil && (o.networkMode != "" && o.networkMode != "none" || len(o.dns) > 0) {
		return nil, fmt.Errorf("%w: WithEgress gives the sandbox no network of its own: it excludes WithNetworkMode(%q) and WithDNS", ErrInvalidOption, o.networkMode)
	}
	o.obs = o.newObserver()
	return o, nil
}

// WithAudit records every call on the sandbox (New, Attach, Execute and
// each command, file operation, transfer, process, port, snapshot, Close)
// as one log/slog record through h, when the call ends: the message
// "sandbox <call>" and the attributes op (the call), sandbox (its ID),
// outcome ("ok" or "error"), error, exit_code, bytes, duration, and the
// command and path as the Redact allows (WithRedact; default
// RedactCommands: commands left out). A failed call is logged at
// slog.LevelWarn, another at slog.LevelInfo. Each decision of an egress
// policy (WithEgress) is a record too, "sandbox egress": outcome, method,
// host, port, rule, reason, sent, received, start and duration. Also for
// Attach.
func WithAudit(h slog.Handler) Option {
	return func(o *options) error {
		o.use("WithAudit", callNew|callAttach)
		if h == nil {
			return errors.New("WithAudit: a nil handler")
		}
		o.audit = h
		return nil
	}
}

// WithTracerProvider sets where the sandbox's spans go (default
// otel.GetTracerProvider(), the global one: no spans until the program
// installs an SDK). Every call makes a span named "sandbox.<call>" with
// the attributes sandbox.id, sandbox.operation, sandbox.bytes,
// sandbox.exit_code, and sandbox.command and sandbox.path as the Redact
// allows. A command (Execute, Command, StartProcess) gets the span's
// context in TRACEPARENT (and TRACESTATE), W3C Trace Context, unless its
// environment sets TRACEPARENT: its own spans join the trace. Also for
// Attach.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		o.use("WithTracerProvider", callNew|callAttach)
		if tp == nil {
			return errors.New("WithTracerProvider: a nil provider")
		}
		o.tracerProvider = tp
		return nil
	}
}

// WithRedact sets what audit records and spans say of commands and paths
// (default RedactCommands). Also for Attach.
func WithRedact(r Redact) Option {
	return func(o *options) error {
		o.use("WithRedact", callNew|callAttach)
		if r == nil {
			return errors.New("WithRedact: a nil Redact")
		}
		o.redact = r
		return nil
	}
}

// WithImage sets the image (default DefaultImage).
func WithImage(image string) Option {
	return func(o *options) error {
		o.use("WithImage", callNew)
		if strings.TrimSpace(image) == "" || strings.ContainsAny(image, " \t\n") {
			return fmt.Errorf("image %q is not an image reference", image)
		}
		o.image = image
		return nil
	}
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// WithName sets the container name (default: Docker picks one). A name in
// use makes New fail.
func WithName(name string) Option {
	return func(o *options) error {
		o.use("WithName", callNew)
		if !validName.MatchString(name) {
			return fmt.Errorf("container name %q must match %s", name, validName)
		}
		o.name = name
		return nil
	}
}

// WithVolumes mounts volumes, in Docker's bind syntax
// "source:target[:options]": a host path or a named volume as source, an
// absolute path in the container as target, options such as "ro".
func WithVolumes(binds ...string) Option {
	return func(o *options) error {
		o.use("WithVolumes", callNew)
		for _, b := range binds {
			parts := strings.Split(b, ":")
			if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !path.IsAbs(parts[1]) {
				return fmt.Errorf("volume %q: want source:/absolute/target[:options]", b)
			}
		}
		o.binds = append(o.binds, binds...)
		return nil
	}
}

// WithWorkingDir sets the working directory (default DefaultWorkingDir):
// where commands run and relative paths resolve. It is created if missing,
// owned by the sandbox user.
func WithWorkingDir(dir string) Option {
	return func(o *options) error {
		o.use("WithWorkingDir", callNew)
		if !path.IsAbs(dir) || strings.ContainsRune(dir, 0) {
			return fmt.Errorf("working dir %q must be an absolute path", dir)
		}
		o.workingDir = path.Clean(dir)
		return nil
	}
}

// WithDirectPorts says whether the library may share a unix socket with
// the container (default true): the shared channel's frames, and the bytes
// of Dial, Forward and the HTTP transport, then go over it rather than
// over the engine's exec streams, and a root sandbox boots from a copy of
// the helper in the socket's directory rather than having it copied in
// through the engine's archive API (docs/internals.md). It applies only
// where the engine runs on this machine (Docker or Podman on a local unix
// socket, on Linux), to a sandbox that New made and Close removes
// (WithAutoRemove(true)): the socket's directory is bind-mounted read-only
// at /run/dockersandbox. Anything that keeps a connection from using it
// makes it use the stream.
func WithDirectPorts(on bool) Option {
	return func(o *options) error {
		o.use("WithDirectPorts", callNew)
		o.directPorts = on
		return nil
	}
}

// WithAutoRemove says whether Close removes the container (default true)
// or only stops it. It applies to New and Attach.
func WithAutoRemove(remove bool) Option {
	return func(o *options) error {
		o.use("WithAutoRemove", callNew|callAttach)
		o.autoRemove = remove
		return nil
	}
}

// WithExecuteTimeout sets Execute's default timeout (default
// DefaultExecuteTimeout); 0 means no timeout. It applies to New and Attach.
func WithExecuteTimeout(d time.Duration) Option {
	return func(o *options) error {
		o.use("WithExecuteTimeout", callNew|callAttach)
		if d < 0 {
			return fmt.Errorf("execute timeout %v is negative", d)
		}
		o.executeTimeout = d
		return nil
	}
}

// WithMaxOutputBytes caps the output Execute returns (default
// DefaultMaxOutputBytes); the rest is counted and dropped as it streams.
// It applies to New and Attach.
func WithMaxOutputBytes(n int) Option {
	return func(o *options) error {
		o.use("WithMaxOutputBytes", callNew|callAttach)
		if n <= 0 {
			return fmt.Errorf("max output bytes %d must be positive", n)
		}
		o.maxOutputBytes = n
		return nil
	}
}

// WithClientOptions configures the Docker client New creates, for example
// a remote daemon over TLS. Without it the client follows DOCKER_HOST,
// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH; with it, only the options given
// count (add client.FromEnv first to start from the environment).
//
// Deprecated: choose the engine with WithEngine(e), e from
// DockerEngine(ctx, opts...), which takes the same client options; one
// engine serves any number of sandboxes.
func WithClientOptions(opts ...client.Opt) Option {
	return func(o *options) error {
		o.use("WithClientOptions", callAny)
		o.clientOpts = append(o.clientOpts, opts...)
		return nil
	}
}

// WithClient makes the sandbox use an existing Docker client, for example
// one shared by many sandboxes. Close does not close it.
//
// Deprecated: choose the engine with WithEngine(e), e from
// DockerEngine(ctx, clientOptions...); to share a client between
// sandboxes, share the engine.
func WithClient(c *client.Client) Option {
	return func(o *options) error {
		o.use("WithClient", callAny)
		if c == nil {
			return fmt.Errorf("nil client")
		}
		o.client = c
		return nil
	}
}

// WithNetworkMode sets the network: "bridge" (Docker's default), "none",
// "host", "container:<id>" or a network's name.
func WithNetworkMode(mode string) Option {
	return func(o *options) error {
		o.use("WithNetworkMode", callNew)
		if strings.TrimSpace(mode) == "" {
			return fmt.Errorf("empty network mode")
		}
		o.networkMode = mode
		return nil
	}
}

// WithEgress gives the sandbox an egress policy (see EgressPolicy): no
// network of its own, and an HTTP proxy inside it that goes where p
// allows. It excludes a WithNetworkMode other than "none" and WithDNS;
// SetEgress changes the policy later. An entry of p.Allow that cannot be
// parsed is ErrInvalidOption. Given to Attach, it serves the egress of a
// sandbox made with WithEgress by another process (one that ended, say,
// which took the egress with it); a sandbox made without is
// ErrInvalidOption.
func WithEgress(p EgressPolicy) Option {
	return func(o *options) error {
		o.use("WithEgress", callNew|callAttach)
		pol, err := egress.Parse(p.Allow, credentials(p.Credentials))
		if err != nil {
			return err
		}
		o.egress, o.egressPolicy = &p, pol
		return nil
	}
}

// WithDNS sets the DNS servers (IP addresses).
func WithDNS(servers ...string) Option {
	return func(o *options) error {
		o.use("WithDNS", callNew)
		for _, s := range servers {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return fmt.Errorf("DNS server %q is not an IP address", s)
			}
			o.dns = append(o.dns, a)
		}
		return nil
	}
}

// WithGPUs requests GPUs as docker run --gpus does: "all" or a count. The
// host needs the NVIDIA container runtime; without it New fails and
// removes the container.
func WithGPUs(spec string) Option {
	return func(o *options) error {
		o.use("WithGPUs", callNew)
		if spec == "all" {
			o.gpus = -1
			return nil
		}
		n, err := strconv.Atoi(spec)
		if err != nil || n <= 0 {
			return fmt.Errorf("GPUs %q: want \"all\" or a positive count", spec)
		}
		o.gpus = n
		return nil
	}
}

// WithEnv adds environment variables, each "KEY=value".
func WithEnv(env ...string) Option {
	return func(o *options) error {
		o.use("WithEnv", callNew)
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
				return fmt.Errorf("env %q: want KEY=value", kv)
			}
		}
		o.env = append(o.env, env...)
		return nil
	}
}

// WithLabels adds container labels. Keys under "com.dockersandbox." are
// the library's and are refused.
func WithLabels(labels map[string]string) Option {
	return func(o *options) error {
		o.use("WithLabels", callNew)
		for k := range labels {
			if k == "" || strings.HasPrefix(k, labelPrefix) {
				return fmt.Errorf("label %q is empty or reserved", k)
			}
		}
		if o.labels == nil {
			o.labels = map[string]string{}
		}
		maps.Copy(o.labels, labels)
		return nil
	}
}

// WithUser runs the container and every command as this user ("name",
// "uid", "uid:gid" or "name:group"); default: the image's user.
func WithUser(user string) Option {
	return func(o *options) error {
		o.use("WithUser", callNew)
		if strings.TrimSpace(user) == "" || strings.ContainsAny(user, " \t\n") {
			return fmt.Errorf("user %q is not a user", user)
		}
		o.user = user
		return nil
	}
}

// WithMemory limits memory, in bytes (Docker's minimum is 6 MiB).
func WithMemory(bytes int64) Option {
	return func(o *options) error {
		o.use("WithMemory", callNew)
		if bytes < 6<<20 {
			return fmt.Errorf("memory limit %d bytes is below Docker's minimum of 6 MiB", bytes)
		}
		o.memory = bytes
		return nil
	}
}

// WithCPUs limits CPU time, in CPUs (e.g. 0.5, 2).
func WithCPUs(cpus float64) Option {
	return func(o *options) error {
		o.use("WithCPUs", callNew)
		if !(cpus > 0) || cpus > 1024 {
			return fmt.Errorf("CPUs %v must be in (0, 1024]", cpus)
		}
		o.nanoCPUs = int64(cpus * 1e9)
		return nil
	}
}

// WithPidsLimit limits the number of processes in the sandbox.
func WithPidsLimit(n int64) Option {
	return func(o *options) error {
		o.use("WithPidsLimit", callNew)
		if n <= 0 {
			return fmt.Errorf("pids limit %d must be positive", n)
		}
		o.pidsLimit = n
		return nil
	}
}

// WithShmSize sets the size of /dev/shm, in bytes.
func WithShmSize(bytes int64) Option {
	return func(o *options) error {
		o.use("WithShmSize", callNew)
		if bytes <= 0 {
			return fmt.Errorf("shm size %d must be positive", bytes)
		}
		o.shmSize = bytes
		return nil
	}
}

// WithDevices exposes host devices, each "host[:container[:permissions]]"
// as docker run --device takes them (permissions from "rwm").
func WithDevices(devices ...string) Option {
	return func(o *options) error {
		o.use("WithDevices", callNew)
		for _, d := range devices {
			parts := strings.Split(d, ":")
			m := container.DeviceMapping{PathOnHost: parts[0], PathInContainer: parts[0], CgroupPermissions: "rwm"}
			if len(parts) > 1 {
				m.PathInContainer = parts[1]
			}
			if len(parts) > 2 {
				m.CgroupPermissions = parts[2]
			}
			if len(parts) > 3 || !path.IsAbs(m.PathOnHost) || !path.IsAbs(m.PathInContainer) ||
				m.CgroupPermissions == "" || strings.Trim(m.CgroupPermissions, "rwm") != "" {
				return fmt.Errorf("device %q: want /host/path[:/container/path[:rwm]]", d)
			}
			o.devices = append(o.devices, m)
		}
		return nil
	}
}

// WithUlimits sets resource limits for processes in the sandbox. Names are
// Docker's: core, cpu, data, fsize, locks, memlock, msgqueue, nice,
// nofile, nproc, rss, rtprio, rttime, sigpending, stack; -1 is unlimited.
func WithUlimits(limits ...Ulimit) Option {
	return func(o *options) error {
		o.use("WithUlimits", callNew)
		for _, l := range limits {
			if !docker.ValidUlimit(l.Name) {
				return fmt.Errorf("ulimit %q: unknown name (want one of %s)", l.Name, strings.Join(docker.UlimitNames(), ", "))
			}
			if l.Soft < -1 || l.Hard < -1 || (l.Hard >= 0 && (l.Soft == -1 || l.Soft > l.Hard)) {
				return fmt.Errorf("ulimit %+v: want soft <= hard, -1 for unlimited", l)
			}
			o.ulimits = append(o.ulimits, &container.Ulimit{Name: l.Name, Soft: l.Soft, Hard: l.Hard})
		}
		return nil
	}
}

// WithReadOnlyRootfs makes the container's root filesystem read-only.
// Mount writable volumes (WithVolumes) where the agent must write.
func WithReadOnlyRootfs(readOnly bool) Option {
	return func(o *options) error {
		o.use("WithReadOnlyRootfs", callNew)
		o.readOnlyRootfs = readOnly
		return nil
	}
}

// WithCapDrop drops Linux capabilities, e.g. "ALL" or "NET_RAW".
func WithCapDrop(caps ...string) Option {
	return func(o *options) error {
		o.use("WithCapDrop", callNew)
		for _, c := range caps {
			if c == "" || strings.ContainsAny(c, " \t,") {
				return fmt.Errorf("capability %q is not a capability name", c)
			}
		}
		o.capDrop = append(o.capDrop, caps...)
		return nil
	}
}

// WithRuntime selects the OCI runtime, e.g. "runsc" for gVisor. Under
// gVisor New refuses with ErrInvalidOption what gVisor cannot do that it
// can see at the call: a pids limit below 64; docs/engines.md lists what
// else differs.
func WithRuntime(runtime string) Option {
	return func(o *options) error {
		o.use("WithRuntime", callNew)
		if strings.TrimSpace(runtime) == "" {
			return fmt.Errorf("empty runtime")
		}
		o.runtime = runtime
		return nil
	}
}

// minGVisorPids is the smallest pids limit New takes under gVisor: with 48
// a sandbox started eight sleeps here, with 32 it died, with 16 it did not
// start.
const minGVisorPids = 64

// gvisor reports whether the runtime is gVisor's runsc.
func (o *options) gvisor() bool { return isGVisor(o.runtime) }

// isGVisor reports whether the OCI runtime named runtime is gVisor's.
func isGVisor(runtime string) bool { return strings.Contains(runtime, "runsc") }

// checkGVisor refuses the container configuration that WithContainerConfig
// left, host, where it escapes what New does under gVisor: a runtime
// other than WithRuntime's that is gVisor's, or is not (the library gives
// a gVisor sandbox a scratch /tmp, a pids floor, a thaw before Close only
// when WithRuntime says gVisor), or a pids limit below gVisor's floor.
func (o *options) checkGVisor(host *container.HostConfig) error {
	if isGVisor(host.Runtime) != o.gvisor() {
		return fmt.Errorf("%w: WithContainerConfig set the OCI runtime to %q and WithRuntime to %q: choose gVisor (runsc) with WithRuntime alone, for what the library does under it", ErrInvalidOption, host.Runtime, o.runtime)
	}
	if o.gvisor() && host.PidsLimit != nil && *host.PidsLimit > 0 && *host.PidsLimit < minGVisorPids {
		return fmt.Errorf("%w: WithContainerConfig set a pids limit of %d under gVisor: %s", ErrInvalidOption, *host.PidsLimit, gvisorPidsWhy)
	}
	return nil
}

// checkEgress refuses, for a sandbox WithEgress, a network WithContainerConfig
// set behind the policy's back: the proxy is its only way out.
func (o *options) checkEgress(host *container.HostConfig) error {
	if o.egress != nil && host.NetworkMode != "none" {
		return fmt.Errorf("%w: WithContainerConfig set the network to %q under WithEgress, whose sandbox has network none (its proxy is the way out)", ErrInvalidOption, host.NetworkMode)
	}
	return nil
}

// gvisorPidsWhy says why a pids limit below minGVisorPids is refused
// under gVisor.
var gvisorPidsWhy = fmt.Sprintf("the limit counts gVisor's own threads too (about 20 to start, more as the sandbox works), and one it reaches ends the sandbox; give at least %d", minGVisorPids)

// WithPullPolicy says when to pull the image (default PullMissing).
func WithPullPolicy(p PullPolicy) Option {
	return func(o *options) error {
		o.use("WithPullPolicy", callNew)
		if p < PullMissing || p > PullNever {
			return fmt.Errorf("unknown pull policy %d", p)
		}
		o.pullPolicy = p
		return nil
	}
}

// WithPullProgress writes image pull progress to w, one line per update.
func WithPullProgress(w io.Writer) Option {
	return func(o *options) error {
		o.use("WithPullProgress", callNew)
		o.pullProgress = w
		return nil
	}
}

// WithContainerConfig is the escape hatch for any other container or host
// setting: fn edits the configuration just before the container is created.
// The library's own settings (entrypoint, labels) are applied after fn.
// A runtime fn sets must be WithRuntime's where either is gVisor's (New
// does more under gVisor), and under WithEgress the network stays "none",
// else New fails with ErrInvalidOption.
func WithContainerConfig(fn func(*container.Config, *container.HostConfig)) Option {
	return func(o *options) error {
		o.use("WithContainerConfig", callNew)
		if fn == nil {
			return fmt.Errorf("nil container config function")
		}
		o.configure = append(o.configure, fn)
		return nil
	}
}

// WithSharedChannel says whether operations go through one long-lived
// connection to the in-container helper (default true: about a millisecond
// per operation) or each through a docker exec of its own (tens of
// milliseconds). Commands with their own stdin, writers or user always get
// an exec of their own. It applies to New and Attach.
func WithSharedChannel(enabled bool) Option {
	return func(o *options) error {
		o.use("WithSharedChannel", callNew|callAttach)
		o.noChannel = !enabled
		return nil
	}
}

// WithMaxDownloadBytes caps the size of one downloaded file (default
// DefaultMaxDownloadBytes); a larger one fails with ErrTooLarge without
// being read. It applies to New and Attach.
func WithMaxDownloadBytes(n int64) Option {
	return func(o *options) error {
		o.use("WithMaxDownloadBytes", callNew|callAttach)
		if n <= 0 {
			return fmt.Errorf("max download bytes %d must be positive", n)
		}
		o.maxDownload = n
		return nil
	}
}

// WithLifetime makes the sandbox end itself after d, even if its owner
// never calls Close (a crashed host process, say). With auto-remove on (the
// default), Docker then removes the container.
func WithLifetime(d time.Duration) Option {
	return func(o *options) error {
		o.use("WithLifetime", callNew)
		if d <= 0 {
			return fmt.Errorf("lifetime %v must be positive", d)
		}
		o.lifetime = d
		return nil
	}
}

// WithIdleTimeout makes the sandbox end itself when no operation reached it
// for d: none ran (a running command counts, however long) and none
// started. A sandbox whose owner crashed (its connections dropped, their
// commands killed) thus ends d later, as does one its owner forgot. With
// auto-remove on (the default), Docker then removes the container.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) error {
		o.use("WithIdleTimeout", callNew)
		if d <= 0 {
			return fmt.Errorf("idle timeout %v must be positive", d)
		}
		o.idleTimeout = d
		return nil
	}
}

// Secure profile defaults (see WithSecureProfile).
const (
	SecureUser      = "65534:65534" // nobody
	SecurePidsLimit = 512
	SecureMemory    = 1 << 30
)

// WithSecureProfile hardens the sandbox: no new privileges, all
// capabilities dropped, a read-only root filesystem with in-memory tmpfs
// mounts (mode 1777, nosuid, nodev; made as anonymous volumes so that
// UploadFiles and DownloadFiles reach them, removed with the container) at
// the working directory and /tmp unless something else is mounted there,
// and — unless other options set them — user SecureUser, network "none",
// SecurePidsLimit processes and SecureMemory bytes (which the tmpfs content
// counts against). See SECURITY.md for what it protects against.
func WithSecureProfile() Option {
	return func(o *options) error {
		o.use("WithSecureProfile", callNew)
		o.secure = true
		return nil
	}
}

// WithOwner sets the owner recorded in the LabelOwner label (default
// "<hostname>:<pid>" of this process). Filter.DeadOwners only considers
// owners of that form, so a sandbox meant to outlive its creator (made by
// a CLI, say) can carry another owner, e.g. "cli".
func WithOwner(owner string) Option {
	return func(o *options) error {
		o.use("WithOwner", callNew)
		if strings.TrimSpace(owner) == "" {
			return fmt.Errorf("empty owner")
		}
		o.owner = owner
		return nil
	}
}

// WithAutoResume makes a call on a paused sandbox resume it first, instead
// of failing with ErrPaused. It applies to New and Attach.
func WithAutoResume() Option {
	return func(o *options) error {
		o.use("WithAutoResume", callNew|callAttach)
		o.durable.autoResume = true
		return nil
	}
}

// WithAutoPause pauses the sandbox when no call ran on this handle for
// idle, and resumes it on the next call (it implies WithAutoResume). A
// running command, Cmd or file operation counts as a call however long it
// runs. It applies to New and Attach, to the handle that has it: calls
// from other handles or processes do not count and find it paused.
func WithAutoPause(idle time.Duration) Option {
	return func(o *options) error {
		o.use("WithAutoPause", callNew|callAttach)
		if idle <= 0 {
			return fmt.Errorf("auto-pause idle time %v must be positive", idle)
		}
		o.durable.autoPause, o.durable.autoResume = idle, true
		return nil
	}
}

// WithStart makes Attach start a stopped sandbox (see Stop) before it
// attaches to it; without it, Attach fails on one with ErrStopped. It
// applies to Attach only.
func WithStart() Option {
	return func(o *options) error {
		o.use("WithStart", callAttach)
		o.durable.start = true
		return nil
	}
}

// WithProcessKeepAlive says whether the sandbox's running processes count
// as activity for its idle timeout (WithIdleTimeout): true by default, so
// that a server started with StartProcess keeps its sandbox; false lets the
// sandbox end when no request came for the idle timeout, processes or not.
func WithProcessKeepAlive(keep bool) Option {
	return func(o *options) error {
		o.use("WithProcessKeepAlive", callNew)
		o.procsIdle = !keep
		return nil
	}
}

// WithSnapshot makes New create the sandbox from the snapshot: its image,
// and the options the snapshotted sandbox was made with (working
// directory, user, environment, labels, limits, network, secure profile,
// lifetimes...). Options after it override those; put it first. The
// secure profile's in-memory directories start with the recorded content.
// The snapshot must be on the engine New connects to.
func WithSnapshot(snap *Snapshot) Option {
	return func(o *options) error {
		o.use("WithSnapshot", callNew)
		if snap == nil || snap.ID == "" {
			return errors.New("nil snapshot")
		}
		var r snapshotRecord
		if err := json.Unmarshal([]byte(snap.Labels[LabelSnapshotOptions]), &r); err != nil {
			return fmt.Errorf("%w %s: its options label is unreadable: %v", errNoSnapshot, shortImageID(snap.ID), err)
		}
		if err := r.apply(o); err != nil {
			return fmt.Errorf("snapshot %s: %v", shortImageID(snap.ID), err)
		}
		o.image, o.pullPolicy = snap.ID, PullNever
		o.snap = snapshotFrom{id: snap.ID, base: r.Image, volumes: r.Volumes}
		return nil
	}
}

// WithEngine makes the sandbox run on e: DockerEngine's value, or another
// engine (Kubernetes', from its own module). Without it, New connects to
// Docker from the environment (or as WithClient or WithClientOptions
// say); it excludes those two: one way chooses the engine. The sandbox
// does not close e: the caller does, after the sandboxes it made are
// closed. It applies to New, Attach, List, Prune, and on Docker to the
// snapshot functions.
//
// On an engine other than Docker's, the Docker-only options are refused
// with ErrInvalidOption naming the option and the engine: WithVolumes,
// WithDNS, WithGPUs, WithDevices, WithUlimits, WithRuntime, WithShmSize,
// WithContainerConfig, WithNetworkMode other than "none", WithPullPolicy
// other than PullMissing, WithPullProgress, and WithSnapshot; Snapshot
// fails with an error wrapping errors.ErrUnsupported.
func WithEngine(e engine.Engine) Option {
	return func(o *options) error {
		o.use("WithEngine", callAny)
		if e == nil {
			return fmt.Errorf("nil engine")
		}
		o.engine = e
		return nil
	}
}

// checkEngine refuses WithEngine beside WithClient or WithClientOptions.
func (o *options) checkEngine() error {
	if o.engine != nil && (o.client != nil || len(o.clientOpts) > 0) {
		return fmt.Errorf("%w: WithEngine excludes WithClient and WithClientOptions (make the Docker engine with DockerEngine(ctx, clientOptions...))", ErrInvalidOption)
	}
	return nil
}

// neutral refuses the options that only the Docker engine has, for New
// on the engine named name.
func (o *options) neutral(name string) error {
	var used []string
	for _, c := range []struct {
		set  bool
		name string
	}{
		{len(o.binds) > 0, "WithVolumes"},
		{len(o.dns) > 0, "WithDNS"},
		{o.gpus != 0, "WithGPUs"},
		{len(o.devices) > 0, "WithDevices"},
		{len(o.ulimits) > 0, "WithUlimits"},
		{o.runtime != "", "WithRuntime"},
		{o.shmSize != 0, "WithShmSize"},
		{len(o.configure) > 0, "WithContainerConfig"},
		{o.networkMode != "" && o.networkMode != "none", fmt.Sprintf("WithNetworkMode(%q)", o.networkMode)},
		{o.pullPolicy != PullMissing, "WithPullPolicy"},
		{o.pullProgress != nil, "WithPullProgress"},
		{o.snap.id != "", "WithSnapshot"},
	} {
		if c.set {
			used = append(used, c.name)
		}
	}
	if len(used) > 0 {
		return fmt.Errorf("%w: %v: Docker only, not on the %s engine", ErrInvalidOption, used, name)
	}
	return nil
}

// dockerOf returns eng as the Docker engine, or an error wrapping
// errors.ErrUnsupported that says what needs Docker.
func dockerOf(eng engine.Engine, what string) (*docker.Engine, error) {
	if d, ok := eng.(*docker.Engine); ok {
		return d, nil
	}
	return nil, fmt.Errorf("sandbox: %s needs the Docker engine, not %s: %w", what, eng.Name(), errors.ErrUnsupported)
}
