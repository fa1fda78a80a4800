package fsops

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEdit(t *testing.T) {
	tests := []struct {
		name       string
		content    string
		old, new   string
		replaceAll bool
		want       string
		count      int
		err        error
	}{
		{"single", "hello world", "world", "there", false, "hello there", 1, nil},
		{"replace all", "a-a-a", "a", "b", true, "b-b-b", 3, nil},
		{"replace all once", "abc", "b", "x", true, "axc", 1, nil},
		{"same string", "abc", "b", "b", false, "abc", 1, nil},
		{"unicode", "naïve café", "café", "bar", false, "naïve bar", 1, nil},
		{"multiline", "a\nb\nc\n", "b\nc", "B\nC", false, "a\nB\nC\n", 1, nil},
		{"lf edit of crlf file", "a\r\nb\r\nc\r\n", "a\nb", "x\ny", false, "x\r\ny\r\nc\r\n", 1, nil},
		{"exact crlf kept raw", "a\r\nb", "a\r\nb", "x\ny", false, "x\ny", 1, nil},
		{"crlf edit of lf file", "a\nb\nc", "a\r\nb", "x\r\ny", false, "x\ny\nc", 1, nil},
		{"no doubled cr", "a\r\nb", "a\nb", "p\r\nq\nr", false, "p\r\nq\r\nr", 1, nil},
		{"crlf replace all", "x\r\ny\r\nx\r\ny", "x\ny", "z", true, "z\r\nz", 2, nil},
		{"not found", "abc", "zzz", "y", false, "", 0, ErrStringNotFound},
		{"case sensitive", "abc", "ABC", "y", false, "", 0, ErrStringNotFound},
		{"not text", "ab\xffcd", "ab", "y", false, "", 0, ErrNotText},
		{"empty old in empty file", "", "", "new text", false, "new text", 1, nil},
		{"empty old in non-empty file", "abc", "", "x", true, "", 0, ErrStringNotFound},
		{"non-empty old in empty file", "", "a", "x", false, "", 0, ErrStringNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, err := Edit([]byte(tt.content), tt.old, tt.new, tt.replaceAll)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.Equal(t, tt.count, n)
		})
	}
}

func TestEditMultipleOccurrences(t *testing.T) {
	for _, tt := range []struct{ content, old string }{
		{"x x x", "x"},
		{"a\r\nb a\r\nb a\r\nb", "a\nb"}, // counted on the winning candidate
	} {
		got, n, err := Edit([]byte(tt.content), tt.old, "y", false)
		require.ErrorIs(t, err, ErrMultipleOccurrences)
		var oe *OccurrencesError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, 3, oe.Count)
		assert.Equal(t, 3, n)
		assert.Nil(t, got)
		assert.Equal(t, "string appears multiple times (3 occurrences)", err.Error())
	}
}

func FuzzEdit(f *testing.F) {
	f.Add([]byte("a\r\nb\r\nc"), "a\nb", "x\ny", false)
	f.Add([]byte("x x x"), "x", "y", true)
	f.Add([]byte(""), "", "new", false)
	f.Add([]byte("\xff"), "a", "b", false)
	f.Fuzz(func(t *testing.T, content []byte, old, new string, replaceAll bool) {
		got, n, err := Edit(content, old, new, replaceAll)
		switch {
		case !utf8.Valid(content):
			require.ErrorIs(t, err, ErrNotText)
		case err == nil:
			require.GreaterOrEqual(t, n, 1)
			require.NotNil(t, got)
			if !replaceAll && old != "" {
				require.Equal(t, 1, n)
			}
		case errors.Is(err, ErrMultipleOccurrences):
			require.False(t, replaceAll)
			require.Greater(t, n, 1)
		default:
			require.ErrorIs(t, err, ErrStringNotFound)
			if old != "" {
				require.NotContains(t, string(content), old)
			}
		}
	})
}
