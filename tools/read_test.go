package tools

import (
	"encoding/base64"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textErr is an error with its own text that matches a sentinel, like the
// sandbox's remote errors ("Line offset 5 exceeds file length (3 lines)").
type textErr struct {
	msg      string
	sentinel error
}

func (e textErr) Error() string { return e.msg }
func (e textErr) Unwrap() error { return e.sentinel }

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

func TestNumberLines(t *testing.T) {
	long := strings.Repeat("x", 5000) + strings.Repeat("y", 5000) + "z"
	tests := []struct {
		name, content string
		start         int
		want          string
	}{
		{"two lines", "a\nb", 1, "1  a\n2  b"},
		{"width grows", "a\nb", 9, " 9  a\n10  b"},
		{"empty line kept", "a\n\nb", 1, "1  a\n2  \n3  b"},
		{"trailing empty line dropped", "a\n", 1, "1  a"},
		{"indentation kept", "\tx\n  y", 3, "3  \tx\n4    y"},
		{"continuation rows", "first\n" + long, 4,
			"  4  first\n  5  " + strings.Repeat("x", 5000) + "\n5.1  " + strings.Repeat("y", 5000) + "\n5.2  z"},
		{"exactly 5000", strings.Repeat("x", 5000), 1, "1  " + strings.Repeat("x", 5000)},
		{"characters, not bytes", strings.Repeat("é", 5001), 1, "  1  " + strings.Repeat("é", 5000) + "\n1.1  é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, numberLines(tt.content, tt.start))
		})
	}
}

func TestRemainingNotice(t *testing.T) {
	tests := []struct {
		start, end, next, total int
		want                    string
	}{
		{1, 2, 2, 5, "\n\n[Read 2 lines (lines 1-2 of 5 total). 3 lines remaining from offset 2.]"},
		{4, 4, 4, 5, "\n\n[Read 1 line (lines 4-4 of 5 total). 1 line remaining from offset 4.]"},
		{1, 100, 100, -1, "\n\n[Read 100 lines (lines 1-100). More lines remain from offset 100.]"},
		{1, 1, 1, -1, "\n\n[Read 1 line (lines 1-1). More lines remain from offset 1.]"},
		{1, 5, -1, 5, ""}, // end of file
		{1, 5, 5, 5, ""},  // end >= total
		{0, 0, -1, 0, ""}, // no lines
		{0, 0, 3, 10, ""}, // no window
		{3, 4, 4, 10, "\n\n[Read 2 lines (lines 3-4 of 10 total). 6 lines remaining from offset 4.]"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, remainingNotice(tt.start, tt.end, tt.next, tt.total), "%+v", tt)
	}
}

// page returns a backend answer for lines start..end of a total-line file.
func page(content string, start, end, total int) sandbox.ReadResult {
	next := end
	if total >= 0 && end >= total {
		next = -1
	}
	return sandbox.ReadResult{Content: content, Encoding: "utf-8", StartLine: start, EndLine: end, TotalLines: total, NextOffset: next}
}

func TestReadFileFormats(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nrest"))
	tests := []struct {
		name, args string
		page       sandbox.ReadResult
		want       string
		wantCall   string
	}{
		{"page with notice", `{"file_path": "/workspace/a.txt", "limit": 2}`,
			page("l1\nl2", 1, 2, 5), "1  l1\n2  l2\n\n[Read 2 lines (lines 1-2 of 5 total). 3 lines remaining from offset 2.]",
			"read /workspace/a.txt [ReadOffset ReadLimit]"},
		{"whole file", `{"file_path": "a.txt"}`, page("one\ntwo", 1, 2, 2), "1  one\n2  two", "read /workspace/a.txt [ReadOffset ReadLimit]"},
		{"offset", `{"file_path": "a.txt", "offset": 9, "limit": 2}`,
			page("x\ny", 10, 11, 11), "10  x\n11  y", ""},
		{"start from the request when the backend gives none", `{"file_path": "a.txt", "offset": 4}`,
			sandbox.ReadResult{Content: "x", Encoding: "utf-8", NextOffset: -1, TotalLines: -1}, "5  x", ""},
		{"unknown total", `{"file_path": "big.log", "limit": 1}`,
			page("x", 1, 1, -1), "1  x\n\n[Read 1 line (lines 1-1). More lines remain from offset 1.]", ""},
		{"negative offset", `{"file_path": "a.txt", "offset": -3}`, page("a", 1, 1, 1),
			"1  a\n\n[Requested offset -3 is before the start of the file; read from line 1 instead.]", ""},
		{"empty file", `{"file_path": "e.txt"}`,
			sandbox.ReadResult{Content: emptyContentWarning, Encoding: "utf-8", NextOffset: -1},
			"System reminder: File exists but has empty contents", ""},
		{"blank content", `{"file_path": "w.txt"}`, page(" \n\t \u3000", 1, 2, 2),
			"System reminder: File exists but has empty contents", ""},
		{"limit 0", `{"file_path": "a.txt", "limit": 0}`,
			sandbox.ReadResult{Encoding: "utf-8", NoLinesRequested: true, NextOffset: -1, TotalLines: -1},
			"System reminder: no lines were read because `limit` was 0. The file was not inspected and may have contents; retry with `limit` >= 1 to read it.", ""},
		{"negative limit", `{"file_path": "a.txt", "limit": -4}`,
			sandbox.ReadResult{Encoding: "utf-8", NoLinesRequested: true, NextOffset: -1, TotalLines: -1},
			"System reminder: no lines were read because `limit` was -4. The file was not inspected and may have contents; retry with `limit` >= 1 to read it.", ""},
		{"integral float arguments", `{"file_path": "a.txt", "offset": 1.0, "limit": 1e0}`, page("b", 2, 2, 3),
			"2  b\n\n[Read 1 line (lines 2-2 of 3 total). 1 line remaining from offset 2.]", ""},
		{"backend truncation banner numbered", `{"file_path": "a.txt"}`,
			sandbox.ReadResult{Content: "ab\n\n[cut]", Encoding: "utf-8", StartLine: 1, EndLine: 1, TotalLines: 1, NextOffset: -1, Truncated: true},
			"1  ab\n2  \n3  [cut]", ""},
		{"media", `{"file_path": "/w/logo.PNG"}`,
			sandbox.ReadResult{Content: png, Encoding: "base64", NextOffset: -1, TotalLines: -1},
			"/w/logo.PNG is an image (image/png, 12 bytes); its content is attached as base64 data.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.read = func(string) (sandbox.ReadResult, error) { return tt.page, nil }
			res := call(t, f, "read_file", tt.args)
			assert.False(t, res.IsError, res.Text)
			assert.Equal(t, tt.want, res.Text)
			if tt.wantCall != "" {
				assert.Equal(t, tt.wantCall, f.lastCall())
			}
		})
	}
}

func TestReadFileMedia(t *testing.T) {
	data := base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 3, 0xff})
	tests := []struct {
		path, encoding, content string
		want                    Media
		text                    string
	}{
		{"/w/a.png", "base64", data, Media{"image", "image/png", data}, "/w/a.png is an image (image/png, 5 bytes); its content is attached as base64 data."},
		{"/w/a.jpg", "base64", data, Media{"image", "image/jpeg", data}, ""},
		{"/w/a.mp3", "base64", data, Media{"audio", "audio/mpeg", data}, "/w/a.mp3 is an audio file (audio/mpeg, 5 bytes); its content is attached as base64 data."},
		{"/w/a.mkv", "base64", data, Media{"video", "video/x-matroska", data}, "/w/a.mkv is a video (video/x-matroska, 5 bytes); its content is attached as base64 data."},
		{"/w/a.pdf", "base64", data, Media{"file", "application/pdf", data}, ""},
		{"/w/a.bin", "base64", data, Media{"file", "application/octet-stream", data}, "/w/a.bin is a binary file (application/octet-stream, 5 bytes); its content is attached as base64 data."},
		{"/w/noext", "base64", data, Media{"file", "application/octet-stream", data}, ""},
		{"/w/a.zip", "base64", data, Media{"file", "application/zip", data}, ""},
		// A media extension with text content is still returned as media.
		{"/w/fake.png", "utf-8", "abc", Media{"image", "image/png", "YWJj"}, "/w/fake.png is an image (image/png, 3 bytes); its content is attached as base64 data."},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := newFake()
			f.read = func(string) (sandbox.ReadResult, error) {
				return sandbox.ReadResult{Content: tt.content, Encoding: tt.encoding, NextOffset: -1, TotalLines: -1}, nil
			}
			res := call(t, f, "read_file", fmt.Sprintf(`{"file_path": %q}`, tt.path))
			require.NotNil(t, res.Media, res.Text)
			assert.False(t, res.IsError)
			assert.Equal(t, tt.want, *res.Media)
			if tt.text != "" {
				assert.Equal(t, tt.text, res.Text)
			}
		})
	}
}

func TestTextOnly(t *testing.T) {
	assert.Equal(t, "plain", Result{Text: "plain"}.TextOnly())
	assert.Equal(t, "/w/a.png is an image (image/png, 5 bytes); its content cannot be shown (this tool returns text only).",
		mediaResult("/w/a.png", "AAECA/8=", "base64").TextOnly())
	assert.Equal(t, "x\n(The file's content cannot be shown: this tool returns text only.)",
		Result{Text: "x", Media: &Media{Type: "file"}}.TextOnly())
}

func TestReadFileErrors(t *testing.T) {
	tests := []struct {
		name, file string
		err        error
		want       string
	}{
		{"missing", "x", pathErr("read", "/workspace/x", fs.ErrNotExist), "Error: File '/workspace/x': file_not_found"},
		{"permission", "/x", pathErr("read", "/x", fs.ErrPermission), "Error: File '/x': permission_denied"},
		{"directory", "/d", pathErr("read", "/d", textErr{"is a directory", sandbox.ErrIsDir}), "Error: File '/d': not_a_file"},
		{"fifo", "/f", pathErr("read", "/f", sandbox.ErrNotRegular), "Error: File '/f': not_a_file"},
		{"offset", "/a", pathErr("read", "/a", textErr{"Line offset 5 exceeds file length (3 lines)", sandbox.ErrOffsetOutOfRange}),
			"Error: File '/a': Line offset 5 exceeds file length (3 lines)"},
		{"binary too large", "/b.png", pathErr("read", "/b.png", textErr{"Binary file exceeds maximum preview size of 512000 bytes", sandbox.ErrBinaryTooLarge}),
			"Error: File '/b.png': Binary file exceeds maximum preview size of 512000 bytes"},
		{"closed", "/a", sandbox.ErrClosed, "Error: File '/a': sandbox: closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.read = func(string) (sandbox.ReadResult, error) { return sandbox.ReadResult{}, tt.err }
			res := call(t, f, "read_file", fmt.Sprintf(`{"file_path": %q}`, tt.file))
			assert.True(t, res.IsError)
			assert.Equal(t, tt.want, res.Text)
		})
	}
}

// rows returns lines start..end, each of width characters.
func rows(start, end, width int) []string {
	var out []string
	for n := start; n <= end; n++ {
		out = append(out, strings.Repeat(string(rune('a'+n%26)), width))
	}
	return out
}

func TestReadFileSizeCap(t *testing.T) {
	msg := fmt.Sprintf(readTruncationMsg, "/workspace/big.txt")
	require.True(t, strings.HasPrefix(msg, "\n\n[Output was truncated due to size limits. The file content is very large."))
	require.Contains(t, msg, "execute(command='jq . /workspace/big.txt')")

	t.Run("cut after the last complete line, notice recomputed", func(t *testing.T) {
		lines := rows(1, 1000, 100) // rows of 106 characters: "   1  " + 100
		r := page(strings.Join(lines, "\n"), 1, 1000, 5000)
		out := formatRead("/workspace/big.txt", r, 0, 1000).Text
		require.LessOrEqual(t, runeLen(out), maxResultChars)
		// Find the last line L shown: the text is rows 1..L, the message, the notice for 1..L.
		formatted := strings.Split(numberLines(r.Content, 1), "\n")
		var shown int
		for l := len(formatted); l > 0; l-- {
			want := strings.Join(formatted[:l], "\n") + msg + remainingNotice(1, l, l, 5000)
			if out == want {
				shown = l
				break
			}
		}
		require.NotZero(t, shown, "output is not rows + message + notice: ...%s", out[len(out)-300:])
		next := strings.Join(formatted[:shown+1], "\n") + msg + remainingNotice(1, shown+1, shown+1, 5000)
		assert.Greater(t, runeLen(next), maxResultChars, "one more line would have fit")
	})
	t.Run("the cap is 80000 characters", func(t *testing.T) {
		lines := rows(1, 800, 94) // rows of 99 characters: "  1  " + 94
		r := page(strings.Join(lines, "\n"), 1, 800, 800)
		out := formatRead("/a", r, 0, 800).Text
		assert.Equal(t, 79999, runeLen(out))
		assert.NotContains(t, out, "[Output was truncated")
		lines[0] += "x"
		r = page(strings.Join(lines, "\n"), 1, 800, 800)
		out = formatRead("/a", r, 0, 800).Text
		assert.Contains(t, out, "[Output was truncated")
	})
	t.Run("a single huge line is cut anywhere, without a notice", func(t *testing.T) {
		r := page(strings.Repeat("é", 100000)+"\nnext", 1, 2, 3)
		out := formatRead("/workspace/big.txt", r, 0, 2).Text
		assert.Equal(t, maxResultChars, runeLen(out))
		assert.True(t, strings.HasSuffix(out, msg))
		assert.True(t, strings.HasPrefix(out, "   1  éé"))
		assert.NotContains(t, out, "[Read ")
	})
	t.Run("the backend's banner rows are never a cut point", func(t *testing.T) {
		content := strings.Join(rows(1, 10, 9000), "\n") + "\n\n[Output was truncated due to size limits. This paginated read result exceeded the sandbox stdout limit.]"
		r := sandbox.ReadResult{Content: content, Encoding: "utf-8", StartLine: 1, EndLine: 10, TotalLines: 20, NextOffset: 10, Truncated: true}
		out := formatRead("/a", r, 0, 100).Text
		assert.Contains(t, out, "[Read 8 lines (lines 1-8 of 20 total). 12 lines remaining from offset 8.]")
		assert.NotContains(t, out, "stdout limit")
	})
}
