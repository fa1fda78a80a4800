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

// A result too large for one frame still reaches the library: grep's
// matches cut, anything else as an error (never no answer at all).
func TestFitResult(t *testing.T) {
	line := strings.Repeat("x", 1000)
	var res proto.Result
	for i := range 100000 { // ~100 MB of JSON
		res.Matches = append(res.Matches, fsops.GrepMatch{Path: "/f", Line: i + 1, Text: line})
	}
	b, err := json.Marshal(&res)
	require.NoError(t, err)
	require.Greater(t, len(b), proto.MaxPayload)
	b, err = fitResult(&res, len(b))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), proto.MaxPayload)
	var got proto.Result
	require.NoError(t, json.Unmarshal(b, &got))
	assert.True(t, got.Truncated)
	assert.Greater(t, len(got.Matches), 50000)
	assert.Equal(t, 1, got.Matches[0].Line)

	big := proto.Result{Entries: make([]fsops.FileInfo, 1)}
	_, err = fitResult(&big, proto.MaxPayload+1)
	assert.ErrorContains(t, err, "frame limit")
}
