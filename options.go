package sandbox

import (
	"fmt"
	"io"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Defaults of New.
const (
	// DefaultImage is the image used when WithImage is not given. (The
	// Python library 1.1 defaults to astral-sh's uv image on GitHub's
	// registry; 1.2 moved to this one, which needs no registry host.)
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

// An Option configures New. Invalid values make New fail with
// ErrInvalidOption before any container exists.
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
	snap           snapshotFrom   // FromSnapshot (fork.go)
	durable        durableOptions // pause.go
	procsIdle      bool           // WithProcessKeepAlive(false) (process_options.go)
	engine         engine.Engine  // WithEngine (engine_option.go)
}

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

func newOptions(opts []Option) (*options, error) {
	o := defaults()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	if o.client != nil && len(o.clientOpts) > 0 {
		return nil, fmt.Errorf("%w: WithClient and WithClientOptions exclude each other", ErrInvalidOption)
	}
	if err := o.checkEngine(); err != nil {
		return nil, err
	}
	return o, nil
}

// WithImage sets the image (default DefaultImage).
func WithImage(image string) Option {
	return func(o *options) error {
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
		if !path.IsAbs(dir) || strings.ContainsRune(dir, 0) {
			return fmt.Errorf("working dir %q must be an absolute path", dir)
		}
		o.workingDir = path.Clean(dir)
		return nil
	}
}

// WithDirectPorts says whether Dial, Forward and the HTTP transport may
// carry their bytes over a unix socket the library shares with the
// container (default true), rather than over the engine's exec stream
// that the other operations use. It applies only where the engine runs on
// this machine (Docker or Podman on a local unix socket, on Linux), to a
// sandbox that New made and Close removes (WithAutoRemove(true)): the
// socket's directory is bind-mounted read-only at /run/dockersandbox.
// Anything that keeps a connection from using it makes it use the stream.
func WithDirectPorts(on bool) Option {
	return func(o *options) error {
		o.directPorts = on
		return nil
	}
}

// WithAutoRemove says whether Close removes the container (default true)
// or only stops it.
func WithAutoRemove(remove bool) Option {
	return func(o *options) error {
		o.autoRemove = remove
		return nil
	}
}

// WithExecuteTimeout sets Execute's default timeout (default
// DefaultExecuteTimeout); 0 means no timeout.
func WithExecuteTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("execute timeout %v is negative", d)
		}
		o.executeTimeout = d
		return nil
	}
}

// WithMaxOutputBytes caps the output Execute returns (default
// DefaultMaxOutputBytes); the rest is counted and dropped as it streams.
func WithMaxOutputBytes(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("max output bytes %d must be positive", n)
		}
		o.maxOutputBytes = n
		return nil
	}
}

// WithClientOptions configures the Docker client New creates, for example
// a remote daemon over TLS:
//
//	sandbox.WithClientOptions(client.WithHost("tcp://10.0.0.5:2376"),
//		client.WithTLSClientConfig(ca, cert, key))
//
// Without it the client follows DOCKER_HOST, DOCKER_TLS_VERIFY and
// DOCKER_CERT_PATH; with it, only the options given count (add
// client.FromEnv first to start from the environment).
func WithClientOptions(opts ...client.Opt) Option {
	return func(o *options) error {
		o.clientOpts = append(o.clientOpts, opts...)
		return nil
	}
}

// WithClient makes the sandbox use an existing Docker client, for example
// one shared by many sandboxes. Close does not close it.
func WithClient(c *client.Client) Option {
	return func(o *options) error {
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
		if strings.TrimSpace(mode) == "" {
			return fmt.Errorf("empty network mode")
		}
		o.networkMode = mode
		return nil
	}
}

// WithDNS sets the DNS servers (IP addresses).
func WithDNS(servers ...string) Option {
	return func(o *options) error {
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
		for _, l := range limits {
			if !validUlimit(l.Name) {
				return fmt.Errorf("ulimit %q: unknown name (want one of %s)", l.Name, strings.Join(ulimitNames(), ", "))
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
		o.readOnlyRootfs = readOnly
		return nil
	}
}

// WithCapDrop drops Linux capabilities, e.g. "ALL" or "NET_RAW".
func WithCapDrop(caps ...string) Option {
	return func(o *options) error {
		for _, c := range caps {
			if c == "" || strings.ContainsAny(c, " \t,") {
				return fmt.Errorf("capability %q is not a capability name", c)
			}
		}
		o.capDrop = append(o.capDrop, caps...)
		return nil
	}
}

// WithRuntime selects the OCI runtime, e.g. "runsc" for gVisor.
func WithRuntime(runtime string) Option {
	return func(o *options) error {
		if strings.TrimSpace(runtime) == "" {
			return fmt.Errorf("empty runtime")
		}
		o.runtime = runtime
		return nil
	}
}

// WithPullPolicy says when to pull the image (default PullMissing).
func WithPullPolicy(p PullPolicy) Option {
	return func(o *options) error {
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
		o.pullProgress = w
		return nil
	}
}

// WithContainerConfig is the escape hatch for any other container or host
// setting: fn edits the configuration just before the container is created.
// The library's own settings (entrypoint, labels) are applied after fn.
func WithContainerConfig(fn func(*container.Config, *container.HostConfig)) Option {
	return func(o *options) error {
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
// an exec of their own.
func WithSharedChannel(enabled bool) Option {
	return func(o *options) error {
		o.noChannel = !enabled
		return nil
	}
}

// WithMaxDownloadBytes caps the size of one downloaded file (default
// DefaultMaxDownloadBytes); a larger one fails with ErrTooLarge without
// being read.
func WithMaxDownloadBytes(n int64) Option {
	return func(o *options) error {
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
		if strings.TrimSpace(owner) == "" {
			return fmt.Errorf("empty owner")
		}
		o.owner = owner
		return nil
	}
}
