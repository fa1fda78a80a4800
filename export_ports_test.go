package sandbox

import (
	"net"
	"time"
)

// HasPortSocket reports whether s shares a port socket with its container
// (ports_socket.go).
func HasPortSocket(s *DockerSandbox) bool { return s.ports != nil }

// ConnIsDirect reports whether c, from Dial, goes over the port socket.
func ConnIsDirect(c net.Conn) bool {
	cc, ok := c.(*Conn)
	return ok && cc.dc != nil
}

// LabelPortsDir is the label holding a sandbox's port socket directory.
const LabelPortsDir = labelPortsDir

// MaxIntroductions bounds the port socket's connections that wait to
// introduce themselves.
const MaxIntroductions = maxIntroductions

// DelayAfterAck makes each port socket introduction pause for d after its
// acknowledgement, until restore.
func DelayAfterAck(d time.Duration) (restore func()) {
	testAfterAck.Store(int64(d))
	return func() { testAfterAck.Store(0) }
}
