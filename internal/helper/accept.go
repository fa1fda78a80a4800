package helper

import (
	"context"
	"net"
	"sync"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// Accepts (OpAccept) carry connections made inside the sandbox to a
// listener of the helper's out to the library: the transport of an egress
// policy, whose proxy runs on the host. Each accept request waits for one
// connection and then carries it as a dial's stream; the library keeps a
// few waiting. The listener is the serving helper's, opened by the first
// accept of its address and closed when the helper ends, or when the
// library cancels the last accept waiting on it (it stops its egress: the
// address is free at once for another handle's helper, whatever becomes
// of this one); nothing here decides what a connection may reach.

// acceptors are a server's listeners, by network and address.
type acceptors struct {
	mu sync.Mutex
	m  map[string]*acceptor
}

// acceptor hands the connections of one listener to accept requests.
type acceptor struct {
	key     string
	waiting int // accept requests waiting on it (acceptors.mu)
	ln      net.Listener
	conns   chan net.Conn
	stop    chan struct{} // closed by closeAll
	done    chan struct{} // closed when the listener failed or closed
	err     error
}

// get returns the acceptor of network and address, listening when there
// is none yet, with one more request waiting on it (see release).
func (a *acceptors) get(network, address string) (*acceptor, error) {
	key := network + " " + address
	a.mu.Lock()
	defer a.mu.Unlock()
	if ac := a.m[key]; ac != nil {
		select {
		case <-ac.done: // failed: listen again
		default:
			ac.waiting++
			return ac, nil
		}
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	ac := &acceptor{key: key, waiting: 1, ln: ln, conns: make(chan net.Conn), stop: make(chan struct{}), done: make(chan struct{})}
	if a.m == nil {
		a.m = map[string]*acceptor{}
	}
	a.m[key] = ac
	go ac.run()
	return ac, nil
}

// run accepts until the listener closes, handing each connection to a
// waiting accept request.
func (ac *acceptor) run() {
	defer close(ac.done)
	for {
		c, err := ac.ln.Accept()
		if err != nil {
			ac.err = err
			return
		}
		select {
		case ac.conns <- c:
		case <-ac.stop:
			c.Close()
			return
		}
	}
}

// release ends a request's wait on ac; the last cancelled one closes the
// listener.
func (a *acceptors) release(ac *acceptor, cancelled bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ac.waiting--
	if cancelled && ac.waiting == 0 && a.m[ac.key] == ac {
		ac.ln.Close()
		close(ac.stop)
		delete(a.m, ac.key)
	}
}

// closeAll closes every listener.
func (a *acceptors) closeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, ac := range a.m {
		ac.ln.Close()
		close(ac.stop)
		delete(a.m, k)
	}
}

// accept waits for the next connection to req.Address's listener and
// carries it as stream id.
func (t *streamTable) accept(ctx context.Context, a *acceptors, id uint32, req proto.Request, send func(proto.Kind, []byte) error) *proto.Result {
	ac, err := a.get(req.Network, req.Address)
	if err != nil {
		return &proto.Result{Error: dialError(err)}
	}
	select {
	case c := <-ac.conns:
		a.release(ac, false)
		return t.carry(ctx, id, req, c, send)
	case <-ac.done:
		a.release(ac, false)
		return &proto.Result{Error: dialError(ac.err)}
	case <-ctx.Done():
		a.release(ac, true)
		return &proto.Result{}
	}
}

// validateAccept checks an accept request: a TCP address, no direct
// connection.
func validateAccept(req *proto.Request) *proto.Error {
	switch req.Network {
	case "tcp", "tcp4", "tcp6":
	default:
		return badRequest("accept: unsupported network %q (tcp, tcp4 or tcp6)", clip(req.Network))
	}
	if req.Direct != "" || req.Token != "" {
		return badRequest("accept: no direct connections")
	}
	if _, _, err := net.SplitHostPort(req.Address); err != nil || len(req.Address) > 256 {
		return badRequest("accept: unusable address %q", clip(req.Address))
	}
	return nil
}
