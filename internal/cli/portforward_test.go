package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseForwardSpec(t *testing.T) {
	for spec, want := range map[string]struct {
		addr string
		port int
	}{
		"8080:80":           {"127.0.0.1:8080", 80},
		"0:80":              {"127.0.0.1:0", 80},
		"127.0.0.2:8080:80": {"127.0.0.2:8080", 80},
		"0.0.0.0:8080:80":   {"0.0.0.0:8080", 80},
		"[::1]:8080:80":     {"[::1]:8080", 80},
		":8080:80":          {"127.0.0.1:8080", 80},
	} {
		addr, port, err := parseForwardSpec(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, want.addr, addr, spec)
		assert.Equal(t, want.port, port, spec)
	}
	for _, bad := range []string{"", "80", "x:80", "8080:0", "8080:70000", "8080:x", "99999:80"} {
		_, _, err := parseForwardSpec(bad)
		assert.Error(t, err, bad)
	}
}
