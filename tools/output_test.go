package tools

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
)

// hostileOutputs are command outputs that grow when escaped for the
// model: each NUL, ESC or invalid byte becomes 3 bytes, a C1 character
// (2 bytes) becomes 6.
func hostileOutputs(n int) map[string]string {
	mix := strings.Repeat("a\x00\x1b[31m\xff\xc2\x9b\r\xe2\x82", n)
	return map[string]string{
		"NULs":         strings.Repeat("\x00", n),
		"ESC":          strings.Repeat("\x1b", n),
		"invalid":      strings.Repeat("\xff", n),
		"C1":           strings.Repeat("\xc2\x9b", n/2),
		"lone CR":      strings.Repeat("\r", n),
		"mix":          mix[:n],
		"plain":        strings.Repeat("abc\n", n/4),
		"multibyte":    strings.Repeat("é", n/2),
		"CRLF at edge": strings.Repeat("x", 99) + "\r\n" + strings.Repeat("\x00", n),
	}
}

// TestExecuteOutputCapAfterEscaping: whatever the command printed, the
// text the model gets holds at most the cap in bytes (plus the marker and
// the status lines), is valid UTF-8 and starts with the escaped output.
func TestExecuteOutputCapAfterEscaping(t *testing.T) {
	const limit = 100
	marker := fmt.Sprintf("\n\n... Output truncated at %d bytes.", limit)
	for name, raw := range hostileOutputs(1000) {
		for _, libCap := range []int{50, 100, 400, 5000} { // the sandbox's own cap, below, at and above the tool's
			t.Run(fmt.Sprintf("%s/%d", name, libCap), func(t *testing.T) {
				resp := sandbox.ExecuteResponse{Output: strings.ToValidUTF8(raw, "\uFFFD")}
				if len(raw) > libCap {
					resp = sandbox.ExecuteResponse{
						Output:    strings.ToValidUTF8(raw[:libCap], "\uFFFD") + fmt.Sprintf("\n\n... Output truncated at %d bytes.", libCap),
						Truncated: true,
					}
				}
				f := newFake()
				f.execute = func(string) (sandbox.ExecuteResponse, error) { return resp, nil }
				res := callOpts(t, f, Options{MaxOutputBytes: limit}, "execute", `{"command": "x"}`)
				assert.True(t, utf8.ValidString(res.Text))
				out, status, ok := strings.Cut(res.Text, "\n[Command succeeded")
				assert.True(t, ok, res.Text)
				effective := min(limit, libCap)
				body, cut := strings.CutSuffix(out, fmt.Sprintf("\n\n... Output truncated at %d bytes.", effective))
				assert.LessOrEqual(t, len(out), limit+len(marker))
				assert.LessOrEqual(t, len(body), effective)
				assert.True(t, strings.HasPrefix(sandbox.SafeText(resp.Output), body), "the kept text is a prefix of the escaped output")
				wantCut := len(sandbox.SafeText(strings.ToValidUTF8(raw, "\uFFFD"))) > effective || len(raw) > libCap
				assert.Equal(t, wantCut, cut, "marker: %q", out)
				assert.Equal(t, wantCut, strings.HasSuffix(status, "[Output was truncated due to size limits]"))
			})
		}
	}
}

// TestExecuteOutputCapKeepsTimeoutLine: the library's timeout line stays
// after the marker, truncated by the library or by the tool.
func TestExecuteOutputCapKeepsTimeoutLine(t *testing.T) {
	f := newFake()
	for _, resp := range []sandbox.ExecuteResponse{
		{Output: strings.Repeat("\x00", 50) + "\nError: Command timed out after 1 seconds.", TimedOut: true, ExitCode: 124},
		{Output: strings.Repeat("\x00", 200) + "\n\n... Output truncated at 200 bytes.\nError: Command timed out after 1 seconds.", TimedOut: true, Truncated: true, ExitCode: 124},
	} {
		f.execute = func(string) (sandbox.ExecuteResponse, error) { return resp, nil }
		res := callOpts(t, f, Options{MaxOutputBytes: 30}, "execute", `{"command": "x"}`)
		assert.Equal(t, strings.Repeat("␀", 10)+"\n\n... Output truncated at 30 bytes.\nError: Command timed out after 1 seconds.\n"+
			"[Command failed with exit code 124]\n[Output was truncated due to size limits]", res.Text)
	}
	// Under the cap, as the library made it.
	f.execute = func(string) (sandbox.ExecuteResponse, error) {
		return sandbox.ExecuteResponse{Output: "x\nError: Command timed out after 1 seconds.", TimedOut: true, ExitCode: 124}, nil
	}
	assert.Equal(t, "x\nError: Command timed out after 1 seconds.\n[Command failed with exit code 124]",
		callOpts(t, f, Options{MaxOutputBytes: 30}, "execute", `{"command": "x"}`).Text)
	// A command that prints the marker's text itself: only the last one
	// is the library's.
	f.execute = func(string) (sandbox.ExecuteResponse, error) {
		return sandbox.ExecuteResponse{Output: "\n\n... Output truncated at 1 bytes.\x00\x00\n\n... Output truncated at 40 bytes.", Truncated: true}, nil
	}
	assert.Equal(t, "\n\n... Output truncated at 1 bytes.␀␀\n\n... Output truncated at 40 bytes.\n[Command succeeded with exit code 0]\n[Output was truncated due to size limits]",
		callOpts(t, f, Options{MaxOutputBytes: 100}, "execute", `{"command": "x"}`).Text)
}

// FuzzEscapePrefix: escapePrefix is the escaped text cut at a character
// boundary within the limit.
func FuzzEscapePrefix(f *testing.F) {
	f.Add("a\x00\x1b\xff\xc2\x9b\r\n\r", 5)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = max(0, limit%64)
		got, cut := escapePrefix(s, limit)
		full := sandbox.SafeText(s)
		if !utf8.ValidString(got) || len(got) > limit || !strings.HasPrefix(full, got) || cut != (len(full) > limit) {
			t.Fatalf("escapePrefix(%q, %d) = %q, %v; full %q", s, limit, got, cut, full)
		}
		if cut && limit-len(got) >= utf8.UTFMax {
			t.Fatalf("escapePrefix(%q, %d) = %q cut more than a character", s, limit, got)
		}
	})
}
