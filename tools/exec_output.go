package tools

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
)

// The output of exec_command and write_stdin as Codex's unified exec
// formats it (codex-rs ExecCommandToolOutput::response_text):
//
//	Chunk ID: 3f9a1c
//	Wall time: 1.0024 seconds
//	Process running with session ID 1000      (or: Process exited with code 0)
//	Original token count: 12
//	Output:
//	<the output since the last call>
//
// Tokens are estimated as Codex estimates them: one per 4 bytes, rounded
// up. Output over the budget (max_output_tokens × 4 bytes) keeps its head
// and tail around Codex's marker "…N tokens truncated…", after a line
// "Total output lines: N".

// bytesPerToken is Codex's APPROX_BYTES_PER_TOKEN.
const bytesPerToken = 4

// approxTokens is Codex's approx_token_count for n bytes: n/4 rounded up.
func approxTokens(n int64) int64 { return (n + bytesPerToken - 1) / bytesPerToken }

// headTail collects a stream of output and keeps, in memory bounded by the
// budget, its first and last bytes: enough to show the model the head and
// tail that fit in budget bytes once escaped. It counts every byte and
// line that went through.
type headTail struct {
	budget  int // bytes the model may see (the escaped head and tail together)
	headCap int // raw bytes kept at the start
	tailCap int // raw bytes kept at the end

	head  []byte
	tail  []byte // the bytes after head, cut to the last tailCap (amortized)
	total int64  // bytes written
	cut   int64  // bytes between head and tail that were discarded
	lines int64  // "\n" written
	last  byte   // the last byte written
}

// newHeadTail returns a collector for a budget of budget bytes.
func newHeadTail(budget int) *headTail {
	budget = max(budget, 0)
	// A few raw bytes more than each half: a character that straddles the
	// cut, and the byte after a "\r", escape as in the whole stream.
	slack := 2 * utf8.UTFMax
	return &headTail{budget: budget, headCap: budget/2 + slack, tailCap: budget - budget/2 + slack}
}

// Write adds p to the stream; it never fails.
func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	h.total += int64(n)
	h.lines += int64(strings.Count(string(p), "\n"))
	h.last = p[n-1]
	if room := h.headCap - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= h.tailCap {
		h.cut += int64(len(h.tail) + len(p) - h.tailCap)
		h.tail = append(h.tail[:0], p[len(p)-h.tailCap:]...)
		return n, nil
	}
	h.tail = append(h.tail, p...)
	if over := len(h.tail) - h.tailCap; over > h.tailCap {
		// Compact only when the tail holds twice its share: amortized
		// constant work per byte, memory at most 2×tailCap.
		h.cut += int64(over)
		h.tail = append(h.tail[:0], h.tail[over:]...)
	}
	return n, nil
}

// skip counts n bytes of the stream that were lost before they could be
// written (the process's log dropped them): they are part of the cut
// middle, and what comes after them belongs to the tail.
func (h *headTail) skip(n int64) {
	if n <= 0 {
		return
	}
	h.total += n
	h.cut += n
	h.headCap = len(h.head) // the head ends where the gap begins
	h.last = 0
}

// totalLines is Rust's str::lines().count() of the whole stream: the
// lines ended by "\n", and a last one without it.
func (h *headTail) totalLines() int64 {
	n := h.lines
	if h.total > 0 && h.last != '\n' {
		n++
	}
	return n
}

// text returns what the model sees of the stream: SafeText of all of it
// when that fits in the budget; otherwise "Total output lines: N", a blank
// line, the escaped head, Codex's marker "…N tokens truncated…" and the
// escaped tail, head and tail at most budget bytes together. It also
// reports whether anything was cut.
func (h *headTail) text() (string, bool) {
	if h.total == 0 {
		return "", false
	}
	var head, tail string
	var kept int64 // raw bytes the head and tail stand for
	if h.cut == 0 {
		// Nothing discarded: escape the whole stream.
		esc := sandbox.SafeText(string(h.head) + string(h.tail))
		if len(esc) <= h.budget {
			return esc, false
		}
		head, tail = escHalf(esc, h.budget)
		kept = h.total * int64(len(head)+len(tail)) / int64(len(esc))
	} else {
		rawTail := h.tail[max(len(h.tail)-h.tailCap, 0):]
		// The first bytes of the tail may continue a character whose
		// start was discarded: skip them, as they cannot be shown.
		for i := 0; i < utf8.UTFMax-1 && len(rawTail) > 0 && !utf8.RuneStart(rawTail[0]); i++ {
			rawTail = rawTail[1:]
		}
		head = cutPrefix(sandbox.SafeText(string(trimPartialRune(h.head))), h.budget/2)
		tail = cutSuffix(sandbox.SafeText(string(rawTail)), h.budget-h.budget/2)
		kept = int64(min(len(head), len(h.head)) + min(len(tail), len(rawTail)))
	}
	removed := approxTokens(max(h.total-kept, 0))
	var b strings.Builder
	b.WriteString("Total output lines: ")
	b.WriteString(strconv.FormatInt(h.totalLines(), 10))
	b.WriteString("\n\n")
	b.WriteString(head)
	b.WriteString("…")
	b.WriteString(strconv.FormatInt(removed, 10))
	b.WriteString(" tokens truncated…")
	b.WriteString(tail)
	return b.String(), true
}

// escHalf splits escaped text into a head of budget/2 bytes and a tail of
// the rest of the budget, at character boundaries.
func escHalf(esc string, budget int) (string, string) {
	return cutPrefix(esc, budget/2), cutSuffix(esc, budget-budget/2)
}

// cutPrefix returns the longest prefix of s of at most n bytes that ends
// at a character boundary.
func cutPrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cutSuffix returns the longest suffix of s of at most n bytes that starts
// at a character boundary.
func cutSuffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - max(n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b (the
// rest of the character was not kept).
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// execReport is one exec_command or write_stdin answer.
type execReport struct {
	wall      float64 // seconds spent in the call
	running   bool    // the process still runs: sessionID is given
	sessionID int
	exitCode  int   // when !running
	dropped   int64 // bytes the process's log lost before any was read (counted in the tokens)
	out       *headTail
}

// String formats r as Codex's unified exec formats its response.
func (r execReport) String() string {
	var b strings.Builder
	b.WriteString("Chunk ID: ")
	b.WriteString(chunkID())
	b.WriteString("\nWall time: ")
	b.WriteString(strconv.FormatFloat(r.wall, 'f', 4, 64))
	b.WriteString(" seconds\n")
	if r.running {
		b.WriteString("Process running with session ID ")
		b.WriteString(strconv.Itoa(r.sessionID))
	} else {
		b.WriteString("Process exited with code ")
		b.WriteString(strconv.Itoa(r.exitCode))
	}
	b.WriteString("\nOriginal token count: ")
	b.WriteString(strconv.FormatInt(approxTokens(r.dropped+r.out.total), 10))
	b.WriteString("\nOutput:\n")
	if r.dropped > 0 {
		// Codex's format_output_omission_marker, before the text.
		b.WriteString("... ")
		b.WriteString(strconv.FormatInt(r.dropped, 10))
		b.WriteString(" bytes omitted ...\n")
	}
	text, _ := r.out.text()
	b.WriteString(text)
	return b.String()
}

// chunkID is Codex's generate_chunk_id: six random hex digits.
func chunkID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
