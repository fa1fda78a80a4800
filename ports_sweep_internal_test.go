//go:build linux

package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// New's sweep removes a port socket directory whose socket is dead (its
// program was killed: the socket file stays, nothing listens), once it is
// a minute old, unless a container names it; it leaves alone a live one, a
// young one, a detached sandbox's (no socket), one holding anything else,
// and a directory of another name.
func TestSweepPortDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := time.Now().Add(-2 * portDirMinAge)
	mk := func(name string, socket, dead bool, mtime time.Time) string {
		dir := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "s"), 0o755))
		if !socket {
			return dir
		}
		sock := filepath.Join(dir, "s", "ports.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		require.NoError(t, err)
		if dead { // as SIGKILL leaves it: the file, no listener
			l.SetUnlinkOnClose(false)
			require.NoError(t, l.Close())
		} else {
			t.Cleanup(func() { l.Close() })
		}
		require.NoError(t, os.Chtimes(sock, mtime, mtime))
		return dir
	}
	dead := mk("dockersandbox-1", true, true, old)
	young := mk("dockersandbox-2", true, true, time.Now())
	live := mk("dockersandbox-3", true, false, old)
	named := mk("dockersandbox-4", true, true, old)
	detached := mk("dockersandbox-5", false, false, old)
	other := mk("dockersandbox-6", true, true, old)
	require.NoError(t, os.WriteFile(filepath.Join(other, "keep"), []byte("x"), 0o600))
	notOurs := mk("elsewhere-7", true, true, old)
	ps, err := newPortSocket() // a real one, as New makes it
	require.NoError(t, err)
	defer ps.close()
	sock := filepath.Join(ps.dir, "ports.sock")
	require.NoError(t, os.Chtimes(sock, old, old))

	sweepPortDirs([]engine.Info{{ID: "c", Labels: map[string]string{labelPortsDir: named}}})
	assert.NoDirExists(t, dead)
	for _, d := range []string{young, live, named, detached, other, notOurs, ps.parent} {
		assert.DirExists(t, d)
	}
	c, err := net.Dial("unix", sock)
	require.NoError(t, err, "the live socket still listens")
	c.Close()
}
