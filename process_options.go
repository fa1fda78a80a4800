package sandbox

import (
	"archive/tar"
	"fmt"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// A ProcessOption adjusts one Start.
type ProcessOption func(*processConfig) error

type processConfig struct {
	dir        string
	env        []string
	logSize    int
	tty        bool
	rows, cols int
}

// DefaultLogSize is the size of a process's output log unless WithLogSize
// says otherwise; MaxLogSize bounds it.
const (
	DefaultLogSize = proto.DefaultLogSize
	MaxLogSize     = proto.MaxLogSize
)

// WithProcessDir runs the process in dir (relative to the working directory).
func WithProcessDir(dir string) ProcessOption {
	return func(c *processConfig) error {
		c.dir = dir
		return nil
	}
}

// WithProcessEnv adds "KEY=value" environment variables for the process.
func WithProcessEnv(env ...string) ProcessOption {
	return func(c *processConfig) error {
		for _, kv := range env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
				return fmt.Errorf("sandbox: env %q: want KEY=value", kv)
			}
		}
		c.env = append(c.env, env...)
		return nil
	}
}

// WithLogSize sets the size of the process's output log in bytes (1 KiB to
// MaxLogSize; DefaultLogSize when not given). The log keeps the latest
// output; the memory is the sandbox's, taken as output comes.
func WithLogSize(n int) ProcessOption {
	return func(c *processConfig) error {
		if n < 1024 || n > MaxLogSize {
			return fmt.Errorf("sandbox: log size must be between 1024 and %d, got %d", MaxLogSize, n)
		}
		c.logSize = n
		return nil
	}
}

// WithTTY runs the process on a pseudo-terminal of rows x cols (stdin,
// stdout and stderr are the terminal, its controlling terminal; see
// Process.Resize). The log then holds what the terminal shows, escape
// sequences and all, with "\r\n" line ends.
func WithTTY(rows, cols int) ProcessOption {
	return func(c *processConfig) error {
		if err := checkProcWinsize(rows, cols); err != nil {
			return err
		}
		c.tty, c.rows, c.cols = true, rows, cols
		return nil
	}
}

// WithProcessKeepAlive says whether the sandbox's running processes count
// as activity for its idle timeout (WithIdleTimeout): true by default, so
// that a server started with Start keeps its sandbox; false lets the
// sandbox end when no request came for the idle timeout, processes or not.
func WithProcessKeepAlive(keep bool) Option {
	return func(o *options) error {
		o.procsIdle = !keep
		return nil
	}
}

// procRunDir is the archive entry of the directory where the helper's PID 1
// serves its process table: dir/run, entered only by the sandbox's user
// (uid, gid), who runs PID 1.
func procRunDir(dir string, uid, gid int, now time.Time) *tar.Header {
	name := "run/"
	if dir != "." {
		name = dir + "/run/"
	}
	return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o700, Uid: uid, Gid: gid, ModTime: now}
}
