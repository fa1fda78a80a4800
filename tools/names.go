package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// File names are bytes, and the model sees text. A name that is valid
// UTF-8 without control characters or backslashes is shown as is; any
// other is shown as its Python repr (quoted, with \xNN, \n ... escapes, and
// each byte that is not UTF-8 as \udc80–\udcff, Python's surrogateescape),
// as ls and glob show every name. A path argument decodes \udc80–\udcff
// escapes back into those bytes, so a name copied from a listing into a
// JSON string reaches the same file; any other lone surrogate is refused,
// since it names no file (encoding/json would make it U+FFFD, the name of
// another file).

// showName renders the path p for the model.
func showName(p string) string {
	if plainName(p) {
		return p
	}
	return pyRepr(p)
}

// plainName reports whether p can be shown without escapes and without
// being mistaken for an escaped name.
func plainName(p string) bool {
	for _, r := range p {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\\' {
			return false
		}
	}
	return true
}

// path reads a path argument: a JSON string in which \udc80–\udcff escapes
// stand for the bytes 0x80–0xff.
func (a *args) path(name string, required bool) (string, bool) {
	raw, ok := a.get(name, required)
	if !ok {
		return "", false
	}
	s, err := decodePath(raw)
	if err != nil {
		a.problem("%q %v", name, err)
		return "", false
	}
	return s, true
}

// decodePath decodes the JSON string raw like encoding/json, except for
// lone surrogate escapes (see above).
func decodePath(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a string, got %s", jsonKind(raw))
	}
	if !hasSurrogateEscape(raw) {
		return s, nil
	}
	raw = bytes.TrimSpace(raw)
	in := raw[1 : len(raw)-1] // valid JSON string: checked above
	var out []byte
	for i := 0; i < len(in); {
		if in[i] != '\\' {
			out = append(out, in[i])
			i++
			continue
		}
		if in[i+1] != 'u' {
			var one string
			_ = json.Unmarshal([]byte(`"`+string(in[i:i+2])+`"`), &one)
			out = append(out, one...)
			i += 2
			continue
		}
		r := hexRune(in[i+2 : i+6])
		i += 6
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00 && i+6 <= len(in) && in[i] == '\\' && in[i+1] == 'u' && utf16.DecodeRune(r, hexRune(in[i+2:i+6])) != utf8.RuneError:
			out = utf8.AppendRune(out, utf16.DecodeRune(r, hexRune(in[i+2:i+6])))
			i += 6
		case r >= 0xdc80 && r <= 0xdcff:
			out = append(out, byte(r-0xdc00))
		case utf16.IsSurrogate(r):
			return "", fmt.Errorf("has a lone surrogate \\u%04x, which names no byte (\\udc80 to \\udcff stand for the bytes 0x80 to 0xff)", r)
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out), nil
}

// hasSurrogateEscape reports whether raw may hold a \uD800–\uDFFF escape.
func hasSurrogateEscape(raw []byte) bool {
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] == '\\' {
			if raw[i+1] == 'u' && (raw[i+2] == 'd' || raw[i+2] == 'D') {
				return true
			}
			i++ // skip the escaped character
		}
	}
	return false
}

func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			r = r*16 + rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r*16 + rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r*16 + rune(c-'A'+10)
		}
	}
	return r
}

// showArg renders a path argument as the model wrote it (deepagents echoes
// it as is), unless it holds bytes that are not UTF-8 (from \udc80–\udcff
// escapes): then as showName does.
func showArg(p string) string {
	if utf8.ValidString(p) {
		return p
	}
	return showName(p)
}
