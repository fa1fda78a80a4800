package proto

import "github.com/dockersandbox/sandbox/internal/fsops"

// Watch event ops on the wire.
const (
	WatchCreate   = "create"
	WatchWrite    = "write"
	WatchRemove   = "remove"
	WatchRename   = "rename"   // the old name of a renamed file (its new name comes as a create)
	WatchOverflow = "overflow" // events were dropped (a queue was full)
)

// WatchEvent is one event; a KindData frame of a watch is a JSON array of
// them.
type WatchEvent struct {
	Path fsops.RawString `json:"p,omitempty"`
	Op   string          `json:"o"`
	Dir  bool            `json:"d,omitempty"`
}
