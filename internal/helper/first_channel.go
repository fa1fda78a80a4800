package helper

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// The first channel: when New shares a token (proto.FirstChannelFile), PID 1
// introduces a connection to the library's socket with it before it writes
// its ready line, and keeps it. When the library opens its shared channel,
// it writes proto.FirstChannelStart on that connection, and PID 1 starts
// the helper at its path then (a helper replaced since the start is the
// one that serves, as with an exec) in serve mode on it: the channel costs
// no engine exec. Anything else on the connection, or its end, and PID 1
// drops it; the library then opens the channel as it would without it.

// prepareFirstChannel connects the first channel, if New shared a token,
// and waits in the background for the library's start.
func prepareFirstChannel() {
	tok, err := os.ReadFile(proto.FirstChannelFile)
	if err != nil || len(tok) > 2*proto.DirectTokenSize+1 {
		return
	}
	c := directConnect(context.Background(), proto.PortsSocket, strings.TrimSpace(string(tok)))
	if c == nil {
		return
	}
	go func() {
		b := []byte{0}
		if _, err := io.ReadFull(c, b); err != nil || b[0] != proto.FirstChannelStart {
			c.Close()
			return
		}
		startServe(c)
	}()
}

// startServe starts the helper at PID 1's path in serve mode on c, as its
// standard input and output (standard error /dev/null), in "/" and a
// session of its own, with PID 1's environment; Init reaps it. c is closed
// in this process.
func startServe(c *net.UnixConn) {
	f, err := c.File()
	c.Close()
	if err != nil {
		return
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer null.Close()
	_, _ = syscall.ForkExec(os.Args[0], []string{os.Args[0], "serve"}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   os.Environ(),
		Files: []uintptr{f.Fd(), f.Fd(), null.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
}
