package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"unicode"

	"github.com/dockersandbox/sandbox"
)

// Default read_file window, as in deepagents.
const (
	defaultReadOffset = 0
	defaultReadLimit  = 100
)

// Texts of deepagents 0.7's read_file.
const (
	emptyContentWarning = "System reminder: File exists but has empty contents"
	noLinesWarning      = "System reminder: no lines were read because `limit` was %d. The file was not inspected and may have contents; retry with `limit` >= 1 to read it."
	readTruncationMsg   = "\n\n[Output was truncated due to size limits. The file content is very large. Consider reformatting the file to make it easier to navigate. For example, if this is JSON, use execute(command='jq . %s') to pretty-print it with line breaks. For other formats, you can use appropriate formatting tools to split long lines.]"
	clampedOffsetNotice = "\n\n[Requested offset %d is before the start of the file; read from line 1 instead.]"
)

func (e *env) readFile(ctx context.Context, a *args) Result {
	filePath, _ := a.path("file_path", true)
	offset, ok := a.integer("offset")
	if !ok {
		offset = defaultReadOffset
	}
	limit, ok := a.integer("limit")
	if !ok {
		limit = defaultReadLimit
	}
	if r, bad := a.done(); bad {
		return r
	}
	p, msg := e.resolve(filePath)
	if msg != "" {
		return errorText(msg)
	}
	r, err := e.sb.Read(ctx, p, sandbox.ReadOffset(max(offset, 0)), sandbox.ReadLimit(max(limit, 0)))
	if err != nil {
		return errorText("Error: " + readError(p, err))
	}
	return formatRead(p, r, offset, limit)
}

// formatRead turns a page into the model's text the way deepagents 0.7's
// read_file does.
func formatRead(p string, r sandbox.ReadResult, offset, limit int) Result {
	content := r.Content
	// The sandbox's own reminder for a 0-byte file (a page with no lines)
	// is shown as is, not numbered as a line of the file.
	if r.Encoding != "base64" && r.StartLine == 0 && content == emptyContentWarning {
		return text(emptyContentWarning)
	}
	if isBlank(content) {
		if content == "" && r.NoLinesRequested {
			return text(fmt.Sprintf(noLinesWarning, limit))
		}
		return text(emptyContentWarning)
	}
	if r.Encoding == "base64" || fileTypeOf(p) != "text" {
		return mediaResult(p, content, r.Encoding)
	}
	start := r.StartLine
	if start == 0 {
		start = max(offset, 0) + 1
	}
	out := truncateRead(numberLines(sandbox.SafeText(content), start), p, r) // SafeText: as execute
	if offset < 0 {
		out += fmt.Sprintf(clampedOffsetNotice, offset)
	}
	return text(out)
}

// isBlank reports whether Python's s.strip() would be empty.
func isBlank(s string) bool {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || 0x1c <= r && r <= 0x1f
	}) == ""
}

// numberLines is deepagents 0.7's format_content_with_line_numbers: one
// row per line, numbered from start; a line over 5000 characters is split
// into rows n, n.1, n.2, ...; markers are right-aligned to the widest
// marker on the page and followed by two spaces. A trailing empty line
// (content ending in "\n") gets no row.
func numberLines(content string, start int) string {
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return numberRows(lines, start)
}

// numberRows is numberLines of lines already split, every one kept (the
// list form of format_content_with_line_numbers).
func numberRows(lines []string, start int) string {
	type row struct{ marker, text string }
	var rows []row
	width := 0
	for i, line := range lines {
		n := strconv.Itoa(start + i)
		for k, chunk := range chunks(line, maxLineChars) {
			m := n
			if k > 0 {
				m = n + "." + strconv.Itoa(k)
			}
			rows = append(rows, row{m, chunk})
			width = max(width, len(m))
		}
	}
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat(" ", width-len(r.marker)))
		b.WriteString(r.marker)
		b.WriteString("  ")
		b.WriteString(r.text)
	}
	return b.String()
}

// chunks splits s into pieces of at most n characters; "" is one piece.
func chunks(s string, n int) []string {
	if runeLen(s) <= n {
		return []string{s}
	}
	var out []string
	for s != "" {
		piece := runePrefix(s, n)
		out = append(out, piece)
		s = s[len(piece):]
	}
	return out
}

// remainingNotice is deepagents 0.7's pagination notice for the lines
// start..end of a file of total lines (-1: unknown), next being the offset
// to continue from (-1: none); "" when the page reached the end.
func remainingNotice(start, end, next, total int) string {
	if start <= 0 || end <= 0 || next < 0 {
		return ""
	}
	read := end - start + 1
	if total < 0 {
		return fmt.Sprintf("\n\n[Read %d %s (lines %d-%d). More lines remain from offset %d.]", read, plural(read, "line"), start, end, next)
	}
	if end >= total {
		return ""
	}
	remaining := total - end
	return fmt.Sprintf("\n\n[Read %d %s (lines %d-%d of %d total). %d %s remaining from offset %d.]",
		read, plural(read, "line"), start, end, total, remaining, plural(remaining, "line"), next)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// truncateRead is deepagents 0.7's _truncate_paginated_read: content plus
// the pagination notice when they fit in 80000 characters; otherwise the
// content is cut after the last complete source line that fits together
// with the truncation message and a recomputed notice (or, when no line
// fits, cut anywhere and followed by the message alone).
func truncateRead(content, p string, r sandbox.ReadResult) string {
	notice := remainingNotice(r.StartLine, r.EndLine, r.NextOffset, r.TotalLines)
	if runeLen(content)+runeLen(notice) < maxResultChars {
		return content + notice
	}
	msg := fmt.Sprintf(readTruncationMsg, showName(p))
	if r.StartLine > 0 && r.EndLine > 0 {
		type boundary struct{ pos, line int }
		var bounds []boundary
		rows := strings.Split(content, "\n")
		pos := 0
		for i, row := range rows {
			pos += runeLen(row)
			line, ok := rowLine(row)
			if !ok || line > r.EndLine {
				break // rows past the page's last line are the backend's own banner
			}
			if i+1 == len(rows) {
				bounds = append(bounds, boundary{pos, line})
			} else if next, ok := rowLine(rows[i+1]); !ok || next != line {
				bounds = append(bounds, boundary{pos, line})
			}
			pos++
		}
		for i := len(bounds) - 1; i >= 0; i-- {
			b := bounds[i]
			adjusted := remainingNotice(r.StartLine, b.line, b.line, r.TotalLines)
			if b.pos+runeLen(msg)+runeLen(adjusted) <= maxResultChars {
				return runePrefix(content, b.pos) + msg + adjusted
			}
		}
	}
	return runePrefix(content, max(0, maxResultChars-runeLen(msg))) + msg
}

// rowLine returns the source line number of a numbered row ("  12.3  x" → 12).
func rowLine(row string) (int, bool) {
	marker, _, _ := strings.Cut(strings.TrimLeft(row, " "), "  ")
	marker, _, _ = strings.Cut(marker, ".")
	n, err := strconv.Atoi(marker)
	return n, err == nil
}

// readError is deepagents' read error for p: "File 'p': code".
func readError(p string, err error) string {
	var code string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = "file_not_found"
	case errors.Is(err, fs.ErrPermission):
		code = "permission_denied"
	case errors.Is(err, sandbox.ErrIsDir), errors.Is(err, sandbox.ErrNotRegular):
		code = "not_a_file"
	case errors.Is(err, sandbox.ErrInvalidPath):
		code = "invalid_path"
	default:
		code = innerMessage(err)
	}
	return fmt.Sprintf("File '%s': %s", showName(p), code)
}

// innerMessage is the message of a file error without its "op path:"
// prefix: the sandbox's deepagents text for offsets past the end and
// oversized binaries ("Line offset 5 exceeds file length (3 lines)").
func innerMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil {
		return pe.Err.Error()
	}
	return err.Error()
}
