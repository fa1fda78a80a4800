// Package byteflag is a command-line flag of bytes with an optional unit,
// shared by the sandbox CLI and sandbox-mcp.
package byteflag

import (
	"fmt"

	"github.com/docker/go-units"
)

// Size is a flag.Value of bytes: 512m, 2g, 1048576 (units are powers of
// 1024, as Docker's --memory). The zero value is unset.
type Size int64

// String formats the size with a unit, or "" when it is unset.
func (s *Size) String() string {
	if *s == 0 {
		return ""
	}
	return units.BytesSize(float64(*s))
}

// Set parses v; a negative or malformed size is an error.
func (s *Size) Set(v string) error {
	n, err := units.RAMInBytes(v)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("negative size %q", v)
	}
	*s = Size(n)
	return nil
}
