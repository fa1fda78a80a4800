package engineflag

import "errors"

// ErrUnknown is an -engine value the binary does not have (a usage
// error: exit status 2).
var ErrUnknown = errors.New("unknown engine")
