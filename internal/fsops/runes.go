package fsops

import "unicode/utf8"

// byteRune is the rune that pattern matching gives a byte that is not part
// of valid UTF-8: each such byte is a character of its own, distinct from
// U+FFFD and from every other byte, so that a pattern matches names byte
// for byte ("x\xff" matches neither "x\xfe" nor "x\uFFFD").
func byteRune(b byte) rune { return utf8.MaxRune + 1 + rune(b) }

// decodeRune is utf8.DecodeRuneInString with byteRune for invalid bytes.
func decodeRune(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		return byteRune(s[0]), 1
	}
	return r, size
}

// patternRunes is []rune(s) with byteRune for invalid bytes.
func patternRunes(s string) []rune {
	rs := make([]rune, 0, len(s))
	for len(s) > 0 {
		r, size := decodeRune(s)
		rs = append(rs, r)
		s = s[size:]
	}
	return rs
}
