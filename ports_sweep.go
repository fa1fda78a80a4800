package sandbox

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/engine"
)

// portDirMinAge is how old a port socket must be before the sweep looks at
// it: between bind and listen a new socket refuses connections too.
const portDirMinAge = time.Minute

// sweepPortDirs removes the port socket directories (see newPortSocket) in
// the temporary directory whose socket nobody listens on any more and that
// no container in list names: the program that made them died without
// Close (SIGKILL, a crash inside New) and its container went another way
// (its idle timeout or lifetime, docker rm, a sweep). A directory without a
// socket (a detached sandbox's, whose handle from Attach removes it) is
// left alone, as is one another user owns. New calls it, after it swept
// the abandoned containers; list is the daemon's sandboxes it listed
// before, less those it removed.
func sweepPortDirs(list []engine.Info) {
	tmp := filepath.Clean(os.TempDir())
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	named := map[string]bool{}
	for _, c := range list {
		if d := c.Labels[labelPortsDir]; d != "" {
			named[d] = true
		}
	}
	for _, e := range entries {
		dir := filepath.Join(tmp, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "dockersandbox-") || named[dir] {
			continue
		}
		if deadPortSocket(filepath.Join(dir, "s", filepath.Base(portsSocket))) {
			removePortsDir(dir)
		}
	}
}

// deadPortSocket reports whether sock is a unix socket older than
// portDirMinAge that refuses connections: its listener is gone.
func deadPortSocket(sock string) bool {
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket || time.Since(fi.ModTime()) < portDirMinAge {
		return false
	}
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err == nil {
		c.Close() // alive: its library reads no token and closes it
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
