package helper

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A result too large for what the library accepts still reaches it: grep's
// matches and glob's entries cut, anything else as an error (never no
// answer, never a frame the library refuses).
func TestFitResult(t *testing.T) {
	line := strings.Repeat("x", 1000)
	var res proto.Result
	for i := range 100000 { // ~100 MB of JSON
		res.Matches = append(res.Matches, fsops.GrepMatch{Path: "/f", Line: i + 1, Text: line})
	}
	b, err := fitResult(proto.OpGrep, &res)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), proto.MaxResult(proto.OpGrep))
	var got proto.Result
	require.NoError(t, json.Unmarshal(b, &got))
	assert.True(t, got.Truncated)
	assert.Greater(t, len(got.Matches), 10000)
	assert.Equal(t, 1, got.Matches[0].Line)

	many := proto.Result{Matches: make([]fsops.GrepMatch, proto.MaxItems+5)}
	b, err = fitResult(proto.OpGrep, &many)
	require.NoError(t, err)
	got = proto.Result{}
	require.NoError(t, json.Unmarshal(b, &got), "the library decodes what an honest helper sends")
	assert.Len(t, got.Matches, proto.MaxItems)
	assert.True(t, got.Truncated)

	glob := proto.Result{Entries: make([]fsops.FileInfo, proto.MaxItems+1)}
	b, err = fitResult(proto.OpGlob, &glob)
	require.NoError(t, err)
	got = proto.Result{}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.True(t, got.Truncated)
	assert.LessOrEqual(t, len(b), proto.MaxResult(proto.OpGlob))

	ls := proto.Result{Entries: make([]fsops.FileInfo, proto.MaxItems+1)}
	_, err = fitResult(proto.OpLs, &ls)
	assert.ErrorContains(t, err, "more than one answer holds")

	long := proto.Result{Error: &proto.Error{Code: proto.CodeInternal, Message: strings.Repeat("e", 1<<20)}}
	b, err = fitResult(proto.OpExec, &long)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), proto.MaxResult(proto.OpExec))
}
