package proto

import "slices"

// The compatibility policy. Version changes only when the framing changes
// so that the two sides cannot talk at all (a library refuses a helper of
// another version at its hello). Everything added to the protocol since
// version 2 is a Capability instead: the helper announces the ones it has
// in Hello.Caps, and the library refuses, before sending it, a request
// that needs one the helper lacks (Hello.Lacks), with one error that says
// what the helper cannot do. A new operation, request field or frame
// kind that an older helper would mishandle gets a new capability.
//
// Helpers that predate the list announce none. Those whose hello says
// TTY (the last of them, which had every capability below) have all of
// preCaps; the others are the version 2 baseline: exec, read, write,
// edit, ls, glob, grep, delete, stat, prepare, rename, cat from offset 0
// and kill, with the Alive frame and the session.

// Capability names a part of the protocol that a helper may lack.
type Capability string

// The capabilities.
const (
	CapInfo      Capability = "info"       // OpInfo
	CapCatOffset Capability = "cat-offset" // OpCat from a Request.Offset (Result.Offset says where it began)
	CapTTY       Capability = "tty"        // Request.TTY, KindResize
	CapDial      Capability = "dial"       // OpDial, direct connections
	CapWatch     Capability = "watch"      // OpWatch
	CapProcesses Capability = "processes"  // the OpProc* operations
	CapAccept    Capability = "accept"     // OpAccept (a sandbox's egress)
	CapCapture   Capability = "capture"    // Request.Capture
)

// caps lists every capability and what a helper that has it can do, for
// the library's error about one that lacks it.
var caps = []struct {
	cap Capability
	can string
}{
	{CapInfo, "stat"},
	{CapCatOffset, "read from an offset"},
	{CapTTY, "run commands on a terminal"},
	{CapDial, "dial"},
	{CapWatch, "watch"},
	{CapProcesses, "run processes"},
	{CapAccept, "accept connections for an egress policy"},
	{CapCapture, "capture a command's output to a file"},
}

// preCaps is what a helper that predates Hello.Caps but says TTY has.
var preCaps = []Capability{CapInfo, CapCatOffset, CapTTY, CapDial, CapWatch, CapProcesses}

// Capabilities returns every capability, which this module's helper
// announces.
func Capabilities() []Capability {
	all := make([]Capability, len(caps))
	for i, c := range caps {
		all[i] = c.cap
	}
	return all
}

// Can says what a helper with c can do ("run processes").
func (c Capability) Can() string {
	for _, k := range caps {
		if k.cap == c {
			return k.can
		}
	}
	return string(c)
}

// Has reports whether the helper that sent h has c.
func (h Hello) Has(c Capability) bool {
	if len(h.Caps) == 0 {
		return h.TTY && slices.Contains(preCaps, c)
	}
	return slices.Contains(h.Caps, c)
}

// Needs returns the capabilities r needs: its operation's, a terminal's,
// an offset's.
func (r Request) Needs() []Capability {
	var need []Capability
	if s, _ := Spec(r.Op); s.Needs != "" {
		need = append(need, s.Needs)
	}
	if r.TTY != nil {
		need = append(need, CapTTY)
	}
	if r.Op == OpCat && r.Offset > 0 {
		need = append(need, CapCatOffset)
	}
	if r.Capture != nil {
		need = append(need, CapCapture)
	}
	return need
}

// Lacks returns a capability r needs that the helper that sent h does not
// have; false when it has them all.
func (h Hello) Lacks(r Request) (Capability, bool) {
	for _, c := range r.Needs() {
		if !h.Has(c) {
			return c, true
		}
	}
	return "", false
}
