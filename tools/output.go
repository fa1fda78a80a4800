package tools

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox"
)

// The execute tool's output cap applies to the text the model receives.
// The library caps the bytes a command printed; SafeText then turns each
// control byte into a visible 3-byte character (a C1 character into six
// bytes), so capped output could triple. modelOutput escapes first and
// cuts the escaped text.

// truncatedMarker starts the library's marker after output it cut, as in
// "\n\n... Output truncated at 512000 bytes."; the tool keeps its wording.
const truncatedMarker = "\n\n... Output truncated at "

// timedOutLine starts the line the library appends to the output of a
// command that timed out.
const timedOutLine = "Error: Command timed out after "

// modelOutput returns the output of resp as the model sees it: SafeText
// of the command's output, cut to at most limit bytes at a character
// boundary and followed by the truncation marker when anything was cut
// (by the library or here), then the library's timeout line if any. The
// result is valid UTF-8 and at most limit bytes plus the marker and the
// timeout line. It also reports whether output was cut.
func modelOutput(resp sandbox.ExecuteResponse, limit int) (string, bool) {
	body, tail := resp.Output, ""
	cut := resp.Truncated
	if cut {
		// The library's marker is the last one: only the timeout line
		// follows it. A command may print the same text itself.
		if i := strings.LastIndex(body, truncatedMarker); i >= 0 {
			if n, rest, ok := markerBytes(body[i+len(truncatedMarker):]); ok {
				limit = min(limit, n)
				body, tail = body[:i], rest
			}
		}
	} else if resp.TimedOut {
		if i := strings.LastIndex(body, timedOutLine); i >= 0 {
			body, tail = body[:i], body[i:]
		}
	}
	esc, over := escapePrefix(body, limit)
	if over {
		cut = true
	}
	if cut {
		esc += truncatedMarker + strconv.Itoa(limit) + " bytes."
		if tail != "" && !strings.HasPrefix(tail, "\n") {
			esc += "\n" // as the library separates its marker and timeout line
		}
	}
	return esc + sandbox.SafeText(tail), cut
}

// markerBytes parses the rest of a truncation marker, "N bytes." and what
// follows it (the library's "\n" and timeout line, or nothing).
func markerBytes(s string) (n int, rest string, ok bool) {
	digits, rest, ok := strings.Cut(s, " bytes.")
	if !ok || rest != "" && !strings.HasPrefix(rest, "\n"+timedOutLine) {
		return 0, "", false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, rest, true
}

// escapePrefix returns SafeText(s) cut to at most limit bytes at a
// character boundary, and whether anything was cut. It escapes only the
// part of s that can reach the limit: every byte of s yields at least one
// byte of escaped text.
func escapePrefix(s string, limit int) (string, bool) {
	limit = max(limit, 0)
	// A few bytes past the limit: a character that straddles it, and the
	// byte after a "\r" (CRLF or lone CR), escape as they do in all of s.
	if len(s) > limit+2*utf8.UTFMax {
		s = s[:limit+2*utf8.UTFMax]
	}
	esc := sandbox.SafeText(s)
	if len(esc) <= limit {
		return esc, false
	}
	for limit > 0 && !utf8.RuneStart(esc[limit]) {
		limit--
	}
	return esc[:limit], true
}
