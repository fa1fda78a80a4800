package integration

import (
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GrepGlob("*.go") selects hidden files too, as GNU grep's --include
// (which deepagents uses) does; Glob keeps its rule (hidden names only for
// a pattern starting with ".").
func TestGrepGlobDotfiles(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		dir := testDir(t)
		writeTree(t, sb, dir, map[string]string{
			"a.go": "TODO a\n", ".hidden.go": "TODO hidden\n", ".cache/c.go": "TODO cache\n", "b.py": "TODO py\n",
		})
		res, err := sb.Grep(ctx, "TODO", dir, sandbox.GrepGlob("*.go"))
		require.NoError(t, err)
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Path)
		}
		assert.Equal(t, absAll(dir, ".cache/c.go", ".hidden.go", "a.go"), got)
		g, err := sb.Glob(ctx, "*.go", dir)
		require.NoError(t, err)
		var globbed []string
		for _, m := range g.Matches {
			globbed = append(globbed, m.Path)
		}
		assert.Equal(t, absAll(dir, ".cache/c.go", "a.go"), globbed)
	})
}
