package sandbox_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The runnable Examples (example*_test.go, in every module of the
// repository) and the programs under examples/ import no internal package,
// so that a user can copy them into a module of their own.
func TestExamplesUsePublicAPI(t *testing.T) {
	t.Parallel()
	checked := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		inExamples := strings.HasPrefix(filepath.ToSlash(p), "examples/")
		if d.IsDir() || !strings.HasSuffix(p, ".go") || !inExamples && !strings.HasPrefix(d.Name(), "example") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		require.NoError(t, err)
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			assert.False(t, strings.HasPrefix(path, "github.com/dockersandbox/sandbox/") && strings.Contains(path+"/", "/internal/"),
				"%s imports %s", p, path)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, checked, 5, "the example files were found")
}
