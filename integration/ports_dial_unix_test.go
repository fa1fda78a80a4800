//go:build linux

package integration

import (
	"io/fs"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// Dial to a unix socket in the sandbox, beyond a missing one: a socket a
// sandbox process serves carries a round trip; a symlink to it is followed
// inside the sandbox's filesystem, as connect(2) does, so a symlink to the
// host's Docker socket finds nothing (ENOENT) and one to a regular file is
// refused (ECONNREFUSED); a socket the sandbox's user may not write is
// EACCES (fs.ErrPermission). The sandbox runs as nobody, so that
// permissions apply (root passes them by).
func TestDialUnix(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.DebianImage, sandbox.WithUser("65534:65534"))
	ctx := testCtx(t)
	res, err := sb.Execute(ctx, "mkdir -p /tmp/u && echo text > /tmp/u/file && ln -s /tmp/u/echo.sock /tmp/u/link && "+
		"ln -s /var/run/docker.sock /tmp/u/host && ln -s /tmp/u/file /tmp/u/filelink && id -u")
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Output)
	require.Equal(t, "65534\n", res.Output)
	_, err = sb.StartProcess(ctx, `exec python3 -c 'import socketserver as s
class H(s.StreamRequestHandler):
  def handle(self):
    while b := self.request.recv(65536): self.request.sendall(b)
s.ThreadingUnixStreamServer("/tmp/u/echo.sock", H).serve_forever()'`)
	require.NoError(t, err)
	var c net.Conn
	require.Eventually(t, func() bool {
		c, err = sb.Dial(ctx, "unix", "/tmp/u/echo.sock")
		return err == nil
	}, 20*time.Second, 100*time.Millisecond, "the unix echo server never answered")
	require.NoError(t, echoOn(c, "over a unix socket\n"))
	require.Equal(t, "unix", c.RemoteAddr().Network())
	require.NoError(t, c.Close())

	c, err = sb.Dial(ctx, "unix", "/tmp/u/link")
	require.NoError(t, err, "a symlink to the socket")
	require.NoError(t, echoOn(c, "through a symlink\n"))
	require.NoError(t, c.Close())

	_, err = sb.Dial(ctx, "unix", "/tmp/u/host")
	require.ErrorIs(t, err, syscall.ENOENT, "a symlink to the host's docker socket resolves in the sandbox")
	_, err = sb.Dial(ctx, "unix", "/tmp/u/filelink")
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a symlink to a regular file")
	_, err = sb.Dial(ctx, "unix", "/tmp/u/file")
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a regular file")

	res, err = sb.Execute(ctx, "chmod 000 /tmp/u/echo.sock")
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Output)
	_, err = sb.Dial(ctx, "unix", "/tmp/u/echo.sock")
	require.ErrorIs(t, err, syscall.EACCES)
	require.ErrorIs(t, err, fs.ErrPermission)
	_, err = sb.Dial(ctx, "unix", "/tmp/u/link")
	require.ErrorIs(t, err, syscall.EACCES, "through the symlink too")
}
