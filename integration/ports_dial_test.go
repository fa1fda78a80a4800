//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/dockersandbox/sandbox/internal/testhook"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pyServer serves the modes of startServer on an image with python3.
const pyServer = `import os, socket, socketserver, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
class H(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        if mode == "echo":
            while True:
                b = s.recv(65536)
                if not b:
                    break
                s.sendall(b)
            s.shutdown(socket.SHUT_WR)
        elif mode == "sink":
            open("/tmp/sink.pid", "w").write(str(os.getpid()))
            time.sleep(1001)
        elif mode == "flood":
            z = bytes(65536)
            while True:
                s.sendall(z)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 512
S(("127.0.0.1", port), H).serve_forever()
`

// startServer starts a server in the sandbox, in the background for the
// rest of the test, and waits until it accepts connections. Modes: echo
// (sends back what it reads, closes after EOF), sink (reads nothing; its
// process id in /tmp/sink.pid), flood (endless zeros), http (serves dir).
func startServer(t *testing.T, sb *sandbox.Sandbox, mode string, port int, dir string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var cmd string
	if res, err := sb.Execute(testCtx(t), "command -v python3 >/dev/null"); err == nil && res.ExitCode == 0 {
		mustWrite(t, sb, "/tmp/server.py", pyServer)
		cmd = fmt.Sprintf("exec python3 /tmp/server.py %s %d", mode, port)
		if mode == "http" {
			cmd = fmt.Sprintf("exec python3 -m http.server %d --bind 127.0.0.1 --directory %s", port, dir)
		}
	} else {
		cmd = map[string]string{
			"echo":  fmt.Sprintf("exec nc -ll -p %d -e cat", port),
			"sink":  fmt.Sprintf(`exec nc -ll -p %d -e sh -c 'echo $$ > /tmp/sink.pid; exec sleep 1001'`, port),
			"flood": fmt.Sprintf("exec nc -ll -p %d -e cat /dev/zero", port),
			"http":  fmt.Sprintf("exec httpd -f -p 127.0.0.1:%d -h %s", port, dir),
		}[mode]
	}
	c := sb.Command(ctx, cmd)
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		cancel()
		_ = c.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := sb.Dial(testCtx(t), "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			conn.Close()
			return
		}
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		require.True(t, time.Now().Before(deadline), "the %s server did not start: %v", mode, err)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDial reaches servers in a sandbox without a network (and under the
// secure profile with DOCKERSANDBOX_TEST_SECURE=1) through Dial, the HTTP
// client and Forward.
//
// It runs twice: with the port socket (the bytes over a unix socket the
// library shares with the container, where the engine is local) and with
// WithDirectPorts(false) (over the shared channel's stream).
func TestDial(t *testing.T) {
	t.Parallel()
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "stream"}[direct], func(t *testing.T) {
			t.Parallel()
			testDial(t, direct)
		})
	}
}

func testDial(t *testing.T, direct bool) {
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		require.Equal(t, direct && testenv.LocalDaemon(), testhook.HasPortSocket(sb), "a port socket (direct %v, local daemon %v)", direct, testenv.LocalDaemon())
		dir := testDir(t)
		mustWrite(t, sb, dir+"/index.html", "hello from the sandbox\n")
		startServer(t, sb, "http", 8080, dir)
		startServer(t, sb, "echo", 7000, "")

		t.Run("HTTPClient", func(t *testing.T) {
			req, err := http.NewRequestWithContext(testCtx(t), "GET", "http://127.0.0.1:8080/index.html", nil)
			require.NoError(t, err)
			resp, err := sb.HTTPClient().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "hello from the sandbox\n", string(body))
		})

		t.Run("Forward", func(t *testing.T) {
			fw, err := sb.Forward(testCtx(t), "", 8080)
			require.NoError(t, err)
			defer fw.Close()
			addr := fw.Addr().(*net.TCPAddr)
			require.True(t, addr.IP.IsLoopback(), "listens on %v", addr)
			for range 3 { // a new connection each time
				resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr.String() + "/index.html")
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, "hello from the sandbox\n", string(body))
			}
			require.NoError(t, fw.Close())
			select {
			case <-fw.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the forward did not end")
			}
			_, err = net.DialTimeout("tcp", addr.String(), time.Second)
			require.Error(t, err, "still listening after Close")
		})

		t.Run("ForwardRefused", func(t *testing.T) {
			fw, err := sb.Forward(testCtx(t), "", 1) // nothing listens there
			require.NoError(t, err)
			defer fw.Close()
			hc, err := net.Dial("tcp", fw.Addr().String())
			if err == nil { // the reset may also come before the dial returns
				defer hc.Close()
				require.NoError(t, hc.SetReadDeadline(time.Now().Add(20*time.Second)))
				_, err = hc.Read(make([]byte, 1))
			}
			require.ErrorIs(t, err, syscall.ECONNRESET, "a refused connection is reset on the host")
		})

		t.Run("ForwardEndsWithContext", func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			fw, err := sb.Forward(ctx, "127.0.0.1:0", 7000)
			require.NoError(t, err)
			hc, err := net.Dial("tcp", fw.Addr().String())
			require.NoError(t, err)
			defer hc.Close()
			_, err = hc.Write([]byte("ping"))
			require.NoError(t, err)
			buf := make([]byte, 4)
			_, err = io.ReadFull(hc, buf)
			require.NoError(t, err)
			assert.Equal(t, "ping", string(buf))
			cancel()
			select {
			case <-fw.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the forward did not end with its context")
			}
			require.NoError(t, hc.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err = hc.Read(buf)
			require.Error(t, err, "a carried connection survived the forward")
			require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "a carried connection survived the forward")
		})

		t.Run("Conn", func(t *testing.T) {
			c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7000")
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, testhook.HasPortSocket(sb), testhook.ConnIsDirect(c), "over the port socket")
			assert.Equal(t, "127.0.0.1:7000", c.RemoteAddr().String())
			la, ok := c.LocalAddr().(*net.TCPAddr)
			require.True(t, ok, "local address %T", c.LocalAddr())
			assert.True(t, la.IP.IsLoopback())

			// Deadlines.
			require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
			_, err = c.Read(make([]byte, 1))
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			assert.True(t, ne.Timeout())
			require.NoError(t, c.SetReadDeadline(time.Time{}))

			// Half-close: the server reads EOF, our side still reads.
			msg := bytes.Repeat([]byte("0123456789abcdef"), 200_000) // 3.2 MB: beyond a window each way
			werr := make(chan error, 1)
			go func() {
				_, err := c.Write(msg)
				if err == nil {
					err = c.(interface{ CloseWrite() error }).CloseWrite()
				}
				werr <- err
			}()
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			require.NoError(t, <-werr)
			assert.True(t, bytes.Equal(msg, got), "echoed %d bytes of %d", len(got), len(msg))
			_, err = c.Write([]byte("x"))
			require.Error(t, err, "write after CloseWrite")
			require.NoError(t, c.Close())
			_, err = c.Read(make([]byte, 1))
			require.ErrorIs(t, err, net.ErrClosed)
		})

		t.Run("Refused", func(t *testing.T) {
			_, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:1")
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
			var oe *net.OpError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, "dial", oe.Op)
			_, err = sb.Dial(testCtx(t), "udp", "127.0.0.1:1")
			require.ErrorIs(t, err, sandbox.ErrInvalidOption)
			_, err = sb.Dial(testCtx(t), "unix", "/nonexistent/socket")
			require.ErrorIs(t, err, syscall.ENOENT)
			_, err = sb.Forward(testCtx(t), "", 0)
			require.ErrorIs(t, err, sandbox.ErrInvalidOption)
		})

		t.Run("Concurrent", func(t *testing.T) {
			// 120 connections open at once, each echoing concurrently.
			// They are made 8 at a time: busybox nc's listen backlog drops
			// handshakes beyond it (TCP retries them seconds later).
			const n = 120
			conns := make([]net.Conn, n)
			sem := make(chan struct{}, 8)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7000")
					if assert.NoError(t, err) {
						conns[i] = c
					}
				}()
			}
			wg.Wait()
			defer func() {
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
			}()
			errs := make(chan error, n)
			for i, c := range conns {
				if c == nil {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- echoOn(c, fmt.Sprintf("connection %d\n", i))
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})

		t.Run("SlowReader", func(t *testing.T) {
			startServer(t, sb, "flood", 7001, "")
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			slow, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7001")
			require.NoError(t, err)
			defer slow.Close()
			_, err = io.ReadFull(slow, make([]byte, 1000)) // flowing, then never read again
			require.NoError(t, err)
			start := time.Now()
			for i := range 20 {
				require.NoError(t, echoOnce(testCtx(t), sb, fmt.Sprintf("beside a slow reader %d\n", i)))
				mustSh(t, sb, "true")
			}
			t.Logf("20 echoes and commands beside a connection nobody reads: %v", time.Since(start))
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			// The connection holds its 1 MiB window; the rest is slack for
			// the tests running beside it in this process (39 MB under
			// load once, against 32 MiB then): a buffer without a bound
			// would hold the flood, hundreds of MB meanwhile.
			assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(64<<20), "host heap grew")
			// It still flows when read again.
			_, err = io.ReadFull(slow, make([]byte, 8<<20))
			require.NoError(t, err)
		})

		t.Run("ForwardSlowReader", func(t *testing.T) {
			startServer(t, sb, "flood", 7002, "")
			ctx := testCtx(t)
			flood, err := sb.Forward(ctx, "", 7002)
			require.NoError(t, err)
			defer flood.Close()
			echo, err := sb.Forward(ctx, "", 7000)
			require.NoError(t, err)
			defer echo.Close()
			var slow net.Conn
			require.Eventually(t, func() bool { // the server listens
				c, err := net.Dial("tcp", flood.Addr().String())
				if err != nil {
					return false
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err = io.ReadFull(c, make([]byte, 1000)); err != nil { // flowing, then never read again
					c.Close()
					return false
				}
				slow = c
				return true
			}, 20*time.Second, 100*time.Millisecond)
			defer slow.Close()
			for i := range 20 {
				c, err := net.Dial("tcp", echo.Addr().String())
				require.NoError(t, err)
				err = echoOn(c, fmt.Sprintf("forwarded beside a slow reader %d\n", i))
				c.Close()
				require.NoError(t, err)
			}
			require.NoError(t, slow.SetReadDeadline(time.Now().Add(30*time.Second)))
			_, err = io.ReadFull(slow, make([]byte, 8<<20))
			require.NoError(t, err, "it flows again when read")
		})

		t.Run("ServerDiesMidStream", func(t *testing.T) {
			startServer(t, sb, "sink", 7002, "")
			// The pid file of startServer's probe, then the one of this connection.
			mustSh(t, sb, "for i in $(seq 50); do [ -s /tmp/sink.pid ] && break; sleep 0.1; done; rm -f /tmp/sink.pid")
			c, err := sb.Dial(testCtx(t), "tcp", "127.0.0.1:7002")
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write(bytes.Repeat([]byte("x"), 100_000)) // unread in the server: its end resets
			require.NoError(t, err)
			mustSh(t, sb, "for i in 1 2 3 4 5 6 7 8 9 10; do [ -s /tmp/sink.pid ] && break; sleep 0.2; done; kill -9 $(cat /tmp/sink.pid)")
			require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
			_, err = io.ReadAll(c)
			require.Error(t, err, "a reset read as a clean EOF")
			require.ErrorIs(t, err, syscall.ECONNRESET)
		})
	}, sandbox.WithNetworkMode("none"), sandbox.WithDirectPorts(direct))
}

// echoOnce sends msg through the echo server on port 7000 and checks the answer.
func echoOnce(ctx context.Context, sb *sandbox.Sandbox, msg string) error {
	c, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000")
	if err != nil {
		return err
	}
	defer c.Close()
	return echoOn(c, msg)
}

// echoOn sends msg on c, connected to an echo server, and checks the answer.
func echoOn(c net.Conn, msg string) error {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != msg {
		return fmt.Errorf("echoed %q, want %q", line, msg)
	}
	return nil
}

// An open Dial connection is activity for the idle timeout, as a running
// command is: the sandbox outlives its idle timeout while the connection
// is open (its server a process that does not count), and ends once it is
// closed.
func TestDialIsActivity(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithIdleTimeout(5*time.Second),
		sandbox.WithProcessKeepAlive(false), sandbox.WithNetworkMode("none"))
	_, err := sb.StartProcess(testCtx(t), "exec nc -ll -p 7000 -e cat")
	require.NoError(t, err)
	var c net.Conn
	require.Eventually(t, func() bool {
		c, err = sb.Dial(testCtx(t), "tcp", "127.0.0.1:7000")
		return err == nil
	}, 10*time.Second, 100*time.Millisecond)
	time.Sleep(8 * time.Second) // past the idle timeout, nothing but the connection
	require.NoError(t, echoOn(c, "still here\n"))
	require.NoError(t, c.Close())
	waitGone(t, sb.ID())
}
