package sandbox

// Internal test: capWriter and trimPartialRune are unexported. It builds into
// the same test binary as the package's external tests, so it runs under
// their TestMain (which needs Docker), although it needs none itself.

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCapWriter feeds data to a capWriter in pieces cut at fuzzed points and
// checks what Execute would return: valid UTF-8, the whole output when it
// fits, else a prefix of at most max bytes followed by the truncation marker.
func FuzzCapWriter(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte{3, 1}, uint16(100))
	f.Add([]byte("hello\nworld\n"), []byte{3, 1}, uint16(5))
	f.Add([]byte("héllo"), []byte{2}, uint16(1))      // cap inside "é"
	f.Add([]byte("€€€€"), []byte{1, 1, 1}, uint16(3)) // cap after a whole "€"
	f.Add([]byte("a€b"), []byte{}, uint16(2))         // cap after the first byte of "€"
	f.Add([]byte("a😀b"), []byte{0, 2}, uint16(4))     // cap inside a 4-byte rune
	f.Add([]byte("\xff\xfe\xe2\x82"), []byte{1}, uint16(3))
	f.Add([]byte("ok\xe2\x82x"), []byte{}, uint16(4)) // cut at an invalid sequence
	f.Add([]byte(""), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data, cuts []byte, m uint16) {
		// max is positive (WithMaxOutputBytes refuses 0); reduce it so that
		// both short and truncated outputs are common.
		max := int(m)%(2*len(data)+2) + 1
		c := &capWriter{max: max}
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(int(cuts[i]), n)
			}
			nw, err := c.Write(rest[:n])
			if nw != n || err != nil {
				t.Fatalf("Write of %d bytes = %d, %v", n, nw, err)
			}
			rest = rest[n:]
			if len(c.buf) > max {
				t.Fatalf("kept %d bytes, max %d", len(c.buf), max)
			}
		}
		if c.total != int64(len(data)) {
			t.Fatalf("total %d, wrote %d", c.total, len(data))
		}

		out := c.String()
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 output %q", out)
		}
		if out != c.String() {
			t.Fatal("String is not repeatable")
		}
		if len(data) <= max {
			if c.truncated() {
				t.Fatalf("%d bytes with max %d reported truncated", len(data), max)
			}
			if want := strings.ToValidUTF8(string(data), "\uFFFD"); out != want {
				t.Fatalf("got %q, want %q", out, want)
			}
			return
		}
		if !c.truncated() {
			t.Fatalf("%d bytes with max %d not reported truncated", len(data), max)
		}
		marker := fmt.Sprintf("\n\n... Output truncated at %d bytes.", max)
		body, ok := strings.CutSuffix(out, marker)
		if !ok {
			t.Fatalf("output %q lacks the marker %q", out, marker)
		}
		// The body renders the first k bytes, where only a character cut by
		// the cap (at most 3 bytes) is dropped.
		k := len(trimPartialRune(data[:max]))
		if k > max || k < max-(utf8.UTFMax-1) {
			t.Fatalf("trimPartialRune kept %d of %d bytes", k, max)
		}
		if want := strings.ToValidUTF8(string(data[:k]), "\uFFFD"); body != want {
			t.Fatalf("body %q, want %q (k=%d)", body, want, k)
		}
		if k < max && utf8.FullRune(data[k:max]) {
			t.Fatalf("dropped the complete sequence %q", data[k:max])
		}
		// Valid input: the body is exactly the longest prefix of at most
		// max bytes that ends on a character boundary.
		if utf8.Valid(data) {
			want := max
			for want > 0 && !utf8.RuneStart(data[want]) {
				want--
			}
			if !bytes.Equal([]byte(body), data[:want]) {
				t.Fatalf("body %q, want the prefix %q", body, data[:want])
			}
		}
	})
}

func TestTrimPartialRune(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"a\xc3", "a"},             // first byte of "é"
		{"a\xe2\x82", "a"},         // two bytes of "€"
		{"a\xf0\x9f\x98", "a"},     // three bytes of "😀"
		{"a😀", "a😀"},               // complete 4-byte rune
		{"\xff", "\xff"},           // invalid, not a partial rune: kept
		{"a\x80\x80", "a\x80\x80"}, // stray continuation bytes: kept
	} {
		if got := string(trimPartialRune([]byte(tc.in))); got != tc.want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
