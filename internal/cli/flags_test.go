package cli

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Internal flags work but -h does not show them.
func TestCLIInternalFlagsHidden(t *testing.T) {
	fs := newFlags("x", "[flags]")
	secret := fs.Bool("secret", false, internalPrefix+"for tests")
	fs.Bool("shown", false, "a user's flag")
	var help strings.Builder
	fs.SetOutput(&help)
	fs.Usage()
	assert.Contains(t, help.String(), "-shown")
	assert.NotContains(t, help.String(), "secret")
	require.NoError(t, parse(fs, []string{"-secret"}))
	assert.True(t, *secret)
	assert.ErrorIs(t, parse(newFlags("y", ""), []string{"-h"}), flag.ErrHelp)
}
