package fsops

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// refGrep is a naive Grep of the regular files of fsys below root (an fs.FS
// name): whole lines from strings.Split, files with a NUL byte in their
// first sniffBytes skipped, a line with a NUL ending its file.
func refGrep(t *testing.T, fsys fs.FS, root, pattern string) []GrepMatch {
	var out []GrepMatch
	err := fs.WalkDir(fsys, root, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, rel)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
			return nil
		}
		content := string(data)
		if content == "" {
			return nil
		}
		lines := strings.Split(content, "\n")
		for i := range lines[:len(lines)-1] {
			lines[i] = strings.TrimSuffix(lines[i], "\r") // only "\n" ends a line; "\r\n" too
		}
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1] // the final "\n" starts no line
		}
		for i, line := range lines {
			if strings.IndexByte(line, 0) >= 0 {
				break
			}
			if strings.Contains(line, pattern) {
				out = append(out, GrepMatch{Path: absPath(rel), Line: i + 1, Text: line})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reference walk: %v", err)
	}
	return out
}

// FuzzGrep greps a small tree whose files have fuzzed content, one of them
// long (two fuzzed pieces, each repeated a fuzzed number of times, so that
// lines cross the 64 KiB read window and the 8192-byte binary sniff), and
// compares the matches with refGrep.
func FuzzGrep(f *testing.F) {
	f.Add("TODO", []byte("a TODO\r\n"), uint16(3), []byte("x\n"), uint16(2), []byte("TODO\n\x00TODO\n"), uint8(0))
	f.Add("ab", []byte("a"), uint16(40000), []byte("b"), uint16(40000), []byte("ab"), uint8(0))                 // match across windows
	f.Add("€x", []byte("€"), uint16(21846), []byte("xx"), uint16(35000), []byte("€x\n"), uint8(0))              // 3-byte runes cut by the window, text cut at 64 KiB
	f.Add("needle", []byte("x"), uint16(9000), []byte("\x00needle\n"), uint16(1), []byte("needle\r"), uint8(2)) // NUL after the sniff
	f.Add("\r", []byte("a\r"), uint16(65535), []byte("\r\n"), uint16(1), []byte("\r\r\n\r"), uint8(1))          // "\r" at the window's end
	f.Add("x", []byte("x\n"), uint16(100), []byte("y"), uint16(0), []byte("x"), uint8(7))                       // MaxCount
	f.Add("", []byte("a"), uint16(1), []byte(""), uint16(0), []byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, pattern string, a []byte, na uint16, b []byte, nb uint16, other []byte, maxCount uint8) {
		const maxBig = 1 << 20
		if len(a)*int(na) > maxBig/2 {
			na = uint16(maxBig / 2 / len(a))
		}
		if len(b)*int(nb) > maxBig/2 {
			nb = uint16(maxBig / 2 / len(b))
		}
		big := append(bytes.Repeat(a, int(na)), bytes.Repeat(b, int(nb))...)
		fsys := fstest.MapFS{
			"ws/d/big.txt":  &fstest.MapFile{Data: big, Mode: 0o644},
			"ws/other.txt":  &fstest.MapFile{Data: other, Mode: 0o644},
			"ws/.hidden/a":  &fstest.MapFile{Data: a, Mode: 0o644},
			"ws/d.txt":      &fstest.MapFile{Data: b, Mode: 0o644}, // walked after ws/d/ (lexical by name)
			"ws/link.txt":   symlink("other.txt"),                  // never opened
			"ws/emptyfile":  file(""),
			"ws/sub/x/y/z0": file(pattern),
		}
		for _, root := range []string{"/ws", "/ws/d/big.txt"} {
			// No time budget: this checks the matches, and a megabyte under
			// -race on a loaded machine took over the default 5 s once
			// (TestGrepBudget checks the budget).
			res, err := Grep(context.Background(), fsys, root, pattern, GrepOptions{MaxCount: int(maxCount), Budget: time.Hour})
			if pattern == "" {
				if !errors.Is(err, ErrInvalidPattern) {
					t.Fatalf("empty pattern: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Grep(%q): %v", root, err)
			}
			want := refGrep(t, fsys, strings.TrimPrefix(root, "/"), pattern)
			wantTrunc := maxCount > 0 && len(want) > int(maxCount)
			if wantTrunc {
				want = want[:maxCount]
			}
			if res.Truncated != wantTrunc {
				t.Fatalf("Grep(%q): Truncated %v, want %v (%d matches)", root, res.Truncated, wantTrunc, len(want))
			}
			if len(res.Matches) != len(want) {
				t.Fatalf("Grep(%q): %d matches %v, want %d %v", root, len(res.Matches), where(res.Matches), len(want), where(want))
			}
			for i, m := range res.Matches {
				w := want[i]
				if m.Path != w.Path || m.Line != w.Line {
					t.Fatalf("Grep(%q): match %d at %s:%d, want %s:%d", root, i, m.Path, m.Line, w.Path, w.Line)
				}
				// The text is the line, cut to 64 KiB on a character boundary.
				if wantText := w.Text[:cutUTF8([]byte(w.Text), maxGrepText)]; m.Text != wantText {
					t.Fatalf("Grep(%q): %s:%d: text of %d bytes (%.40q...), want %d bytes (%.40q...)",
						root, m.Path, m.Line, len(m.Text), m.Text, len(wantText), wantText)
				}
			}
		}
	})
}
