package sandbox

// Detach lets go of the sandbox without touching its container: the
// container keeps running, with its files, for another
// handle to take (Attach, in this process or another one) or for Prune,
// its lifetime or its idle timeout to end. Use it for a handle from Attach
// that must not end the sandbox, and for a sandbox handed to another
// process (give it the ID first).
//
// Detach drops the handle's shared channel to the helper and releases the
// Docker client if the sandbox made it. Calls in flight on the shared
// channel end with ErrClosed and their commands are killed (as when their
// context ends); a Cmd on an exec of its own (one with Stdin or User set)
// runs on to its end. Later calls on the handle return ErrClosed, and a
// later Close returns nil and leaves the container alone, so
//
//	sb, err := sandbox.New(ctx)
//	...
//	defer sb.Close() // removes the container, unless it was handed over
//	...
//	handOver(sb.ID())
//	sb.Detach()
//
// keeps it on every path but the hand-over. Detach after Close, or during
// it, does nothing; it is safe to call more than once and concurrently.
func (s *DockerSandbox) Detach() {
	s.closeMu.Lock()
	if s.closeDone || s.closing != nil {
		s.closeMu.Unlock()
		return
	}
	s.closeDone = true // a later Close has nothing to do
	s.closed.Store(true)
	s.closeMu.Unlock()
	s.stopAutoPause()
	s.closeChannel()
	s.detachPorts()
	if s.ownEngine {
		_ = s.eng.Close() // Docker's only drops idle connections
	}
}
