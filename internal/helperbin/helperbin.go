// Package helperbin embeds the in-container helper, built for each
// architecture a sandbox image may have. The binaries are generated
// (go generate ./internal/helperbin), reproducible and committed; CI checks
// that they match the sources.
package helperbin

import (
	_ "embed"
	"fmt"
)

//go:generate sh build.sh amd64
//go:generate sh build.sh arm64

//go:embed sandbox-helper-linux-amd64
var amd64 []byte

//go:embed sandbox-helper-linux-arm64
var arm64 []byte

// ErrUnsupportedArch reports an image architecture with no helper build.
var ErrUnsupportedArch = fmt.Errorf("unsupported image architecture")

// For returns the helper binary for a Docker/OCI architecture name.
func For(arch string) ([]byte, error) {
	switch arch {
	case "amd64", "x86_64":
		return amd64, nil
	case "arm64", "aarch64":
		return arm64, nil
	}
	return nil, fmt.Errorf("%w %q: the helper is built for amd64 and arm64 only", ErrUnsupportedArch, arch)
}
