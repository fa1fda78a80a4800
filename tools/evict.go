package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Eviction of large tool results, as deepagents 0.7.8's
// FilesystemMiddleware does it (middleware/filesystem.py,
// middleware/_message_eviction.py): a result over the threshold is
// written to the sandbox at EvictDir/<tool call ID> and the model gets
// a message with the path, how to page it with read_file, and a preview
// of its head and tail.

// Defaults of the eviction options.
const (
	// DefaultEvictTokens is the default of Options.EvictTokens: deepagents'
	// tool_token_limit_before_evict.
	DefaultEvictTokens = 20000
	// DefaultEvictDir is the default of Options.EvictDir: deepagents'
	// large tool results prefix.
	DefaultEvictDir = "/large_tool_results"

	charsPerToken = 4 // deepagents' NUM_CHARS_PER_TOKEN
)

// notEvicted lists the tools whose results are never evicted, deepagents'
// TOOLS_EXCLUDED_FROM_EVICTION: they page or bound themselves.
var notEvicted = map[string]bool{
	"ls": true, "glob": true, "grep": true, "read_file": true,
	"edit_file": true, "write_file": true, "delete": true,
}

type callIDKey struct{}

// WithCallID returns ctx carrying id, the ID of the model's tool call (an
// LLM API's tool_call_id): a tool whose result is evicted names its file
// after it. A call without one gets an ID of its own ("call_" and 24
// random hex digits), which the message gives the model.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// callID returns ctx's tool call ID, making one when it has none.
func callID(ctx context.Context) (context.Context, string) {
	if id, ok := ctx.Value(callIDKey{}).(string); ok && id != "" {
		return ctx, id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := "call_" + hex.EncodeToString(b[:])
	return WithCallID(ctx, id), id
}

// sanitizeCallID is deepagents' sanitize_tool_call_id: no path separator
// or dot reaches the file name.
func sanitizeCallID(id string) string {
	return strings.NewReplacer(".", "_", "/", "_", `\`, "_").Replace(id)
}

// evictLimit is the threshold in characters; 0 when eviction is off.
func (o Options) evictLimit() int {
	if o.EvictTokens < 0 {
		return 0
	}
	return o.EvictTokens * charsPerToken
}

// resultPath is where the result of the call with id goes.
func (o Options) resultPath(id string) string {
	return path.Join(o.EvictDir, sanitizeCallID(id))
}

// writer is what eviction needs of a sandbox.
type writer interface {
	Write(ctx context.Context, path string, content []byte) error
}

// evict replaces r by deepagents' message when tool's result is over the
// threshold and could be written to the sandbox; else r stands (as in
// deepagents, a failed write keeps the result inline).
func evict(ctx context.Context, sb any, o Options, tool, id string, r Result) Result {
	limit := o.evictLimit()
	w, ok := sb.(writer)
	if limit == 0 || notEvicted[tool] || r.Media != nil || !ok ||
		len(r.Text) <= limit || utf8.RuneCountInString(r.Text) <= limit {
		return r
	}
	p := o.resultPath(id)
	if err := w.Write(ctx, p, []byte(r.Text)); err != nil {
		return r
	}
	r.Text = tooLargeMessage(id, p, preview(r.Text))
	return r
}

// tooLargeMessage is deepagents' TOO_LARGE_TOOL_MSG.
func tooLargeMessage(id, path, sample string) string {
	return "Tool result too large, the result of this tool call " + id +
		" was saved in the filesystem at this path: " + path + "\n\n" +
		"You can read the result from the filesystem by using the read_file tool, but make sure to only read part of the result at a time.\n\n" +
		"You can do this by specifying an offset and limit in the read_file tool call. For example, to read the first 100 lines, you can use the read_file tool with offset=0 and limit=100.\n\n" +
		"Here is a preview showing the head and tail of the result (lines of the form `... [N lines truncated] ...` indicate omitted lines in the middle of the content):\n\n" +
		sample + "\n"
}

// Preview sizes, deepagents' _create_content_preview.
const (
	previewHead      = 5
	previewTail      = 5
	previewLineChars = 1000
)

// preview is deepagents' _create_content_preview: the first and last five
// lines, each cut to 1,000 characters and numbered, around a marker that
// counts the lines left out.
func preview(s string) string {
	lines := splitLines(s)
	if len(lines) <= previewHead+previewTail {
		return numberRows(clip(lines), 1)
	}
	head := numberRows(clip(lines[:previewHead]), 1)
	tailStart := len(lines) - previewTail
	tail := numberRows(clip(lines[tailStart:]), tailStart+1)
	return head + "\n" + linesTruncated(int64(len(lines)-previewHead-previewTail)) + "\n" + tail
}

func linesTruncated(n int64) string {
	return "... [" + strconv.FormatInt(n, 10) + " lines truncated] ..."
}

// clip cuts each line to previewLineChars characters.
func clip(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if utf8.RuneCountInString(l) > previewLineChars {
			n := 0
			for j := range l {
				if n == previewLineChars {
					l = l[:j]
					break
				}
				n++
			}
		}
		out[i] = l
	}
	return out
}

// splitLines is Python's str.splitlines: lines end at \n, \r\n, \r, \v,
// \f, \x1c, \x1d, \x1e, \x85, U+2028 and U+2029, and the ends are dropped
// (a final end makes no empty line).
func splitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		end := 0
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end = n
		case '\r':
			end = n
			if i+1 < len(s) && s[i+1] == '\n' {
				end++
			}
		}
		if end == 0 {
			i += n
			continue
		}
		lines = append(lines, s[start:i])
		i += end
		start = i
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// Capture at source, as deepagents' BaseSandbox.execute_with_offload
// (backends/sandbox.py) does with a shell wrapper: here the helper keeps
// the output in the file as it streams (sandbox.ExecCapture).
const (
	captureHeadBytes = 2000 // the preview: at most 5 lines of the first 2,000 bytes
	captureTailBytes = 2000 // and of the last 2,000
)

// captureCapped is deepagents' note when the capture limit was reached.
const captureCapped = "[Output exceeded the capture size limit and was truncated; the saved file is incomplete]"

// capturePreview is execute_with_offload's preview of a file of lines
// newlines: when there are over ten, the first five lines of its first
// 2,000 bytes, the marker, the last five of its last 2,000; else its first
// 4,000 bytes. head is the file's start (the command's Output), tail its
// end. Bytes, not lines, as the wrapper's head -c and tail -c count: a cut
// may fall inside a line (never inside a character here).
func capturePreview(head string, tail []byte, lines int64) string {
	omitted := lines - previewHead - previewTail
	if omitted <= 0 {
		return cutBytes(head, 2*captureHeadBytes)
	}
	h := firstLines(cutBytes(head, captureHeadBytes), previewHead)
	t := string(tail[max(0, len(tail)-captureTailBytes):])
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return h + linesTruncated(omitted) + "\n" + lastLines(t, previewTail)
}

// cutBytes is s's first n bytes, without a character cut in two.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// firstLines is head -n n: up to and including the nth newline.
func firstLines(s string, n int) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[:i+1]
			}
		}
	}
	return s
}

// lastLines is tail -n n: the last n lines, a final one without a newline
// counted.
func lastLines(s string, n int) string {
	end := len(s)
	if end > 0 && s[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
