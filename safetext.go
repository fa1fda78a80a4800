package sandbox

import (
	"strings"
	"unicode/utf8"
)

// SafeText makes text that came out of a sandbox (command output, file
// content, grep lines) safe to show to a model and to print on a terminal:
// nothing in the result can move a terminal's cursor, change its colours or
// title, ring its bell, clear its screen or hide text, and every byte the
// sandbox produced stays visible as something.
//
//   - "\n" and "\t" are kept, and so is "\r" right before "\n" (a CRLF line
//     end); a lone "\r", which would let later text overwrite earlier text
//     on a terminal, becomes U+240D (␍).
//   - The other C0 control characters U+0000–U+001F, NUL and ESC included,
//     become their Unicode Control Pictures U+2400–U+241F (␀ … ␛ …), and
//     DEL (U+007F) becomes U+2421 (␡): one visible character for one.
//   - The C1 control characters U+0080–U+009F (among them CSI, U+009B,
//     which some terminals take for ESC [) become the six ASCII characters
//     `\u0080` … `\u009f`: they have no pictures.
//   - Invalid UTF-8 becomes U+FFFD (�), so the result is valid UTF-8.
//
// Everything else, other Unicode format characters included, is kept.
// Text that needs no change is returned as is, without copying.
//
// The library does not apply SafeText itself (Execute's output and Read's
// content are the bytes the sandbox produced, as valid UTF-8); package
// tools applies it to the text it gives the model.
func SafeText(s string) string {
	if !needsSafeText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteByte(byte(r))
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				b.WriteByte('\r')
			} else {
				b.WriteRune('\u240D')
			}
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('\u2421')
		case r >= 0x80 && r <= 0x9f:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsSafeText reports whether SafeText would change s.
func needsSafeText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r':
			if i+1 == len(s) || s[i+1] != '\n' {
				return true
			}
		case c < 0x20 && c != '\n' && c != '\t', c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f: // U+0080–U+009F
			return true
		}
	}
	return !utf8.ValidString(s)
}
