package fsops

import (
	"bytes"
	"errors"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader for the wire forms of this package's results, which
// travel by the thousand (an Ls of a large directory): decoding them with
// encoding/json through a shadow struct scanned every entry three times.
// It is as strict as the callers need: whatever encoding/json accepts as
// the value, and an error (never a panic) for anything it cannot read.

var errJSON = errors.New("fsops: malformed JSON")

// unquote decodes the JSON string s (quotes included) as encoding/json
// does: invalid UTF-8 and lone surrogates become U+FFFD.
func unquote(s []byte) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", errJSON
	}
	s = s[1 : len(s)-1]
	r := 0
	for r < len(s) && s[r] != '\\' && s[r] != '"' && s[r] >= ' ' && s[r] < utf8.RuneSelf {
		r++
	}
	if r == len(s) {
		return string(s), nil
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:r]...)
	for r < len(s) {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return "", errJSON
			}
			switch e := s[r+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(s[r:])
				if rr < 0 {
					return "", errJSON
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, hex4(s[r:])); dec != utf8.RuneError {
						b = utf8.AppendRune(b, dec)
						r += 6
						continue
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default:
				return "", errJSON
			}
			r += 2
		case c == '"' || c < ' ':
			return "", errJSON
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return string(b), nil
}

// hex4 reads the escape `\uXXXX` at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value that starts at data[i].
func valueEnd(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errJSON
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errJSON
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := valueEnd(data, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errJSON
	}
	j := i
	for j < len(data) && !isSpace(data[j]) && data[j] != ',' && data[j] != '}' && data[j] != ']' {
		j++
	}
	if j == i {
		return 0, errJSON
	}
	return j, nil
}

// CountArray returns the number of elements of the JSON array data (0 for
// null), without decoding them.
func CountArray(data []byte) (int, error) {
	i := skipSpace(data, 0)
	if bytes.HasPrefix(data[i:], []byte("null")) {
		return 0, trailing(data, i+len("null"))
	}
	if i >= len(data) || data[i] != '[' {
		return 0, errJSON
	}
	if i = skipSpace(data, i+1); i < len(data) && data[i] == ']' {
		return 0, trailing(data, i+1)
	}
	for n := 1; ; n++ {
		end, err := valueEnd(data, i)
		if err != nil {
			return 0, err
		}
		if i = skipSpace(data, end); i >= len(data) {
			return 0, errJSON
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return n, trailing(data, i+1)
		default:
			return 0, errJSON
		}
	}
}

// eachField calls f with each key and raw value of the JSON object data.
// null stands for no fields.
func eachField(data []byte, f func(key, val []byte) error) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errJSON
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return trailing(data, i+1)
	}
	for {
		end, err := valueEnd(data, i)
		if err != nil || data[i] != '"' {
			return errJSON
		}
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			k, err := unquote(data[i:end])
			if err != nil {
				return err
			}
			key = []byte(k)
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return errJSON
		}
		i = skipSpace(data, i+1)
		end, err = valueEnd(data, i)
		if err != nil {
			return err
		}
		if err := f(key, data[i:end]); err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return errJSON
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return trailing(data, i+1)
		default:
			return errJSON
		}
	}
}

func trailing(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return errJSON
	}
	return nil
}

// The value readers below accept null as "leave as is", as encoding/json
// does.

func readBool(val []byte, b *bool) error {
	switch string(val) {
	case "true":
		*b = true
	case "false":
		*b = false
	case "null":
	default:
		return errJSON
	}
	return nil
}

func readInt(val []byte, n *int) error {
	if string(val) == "null" {
		return nil
	}
	v, err := strconv.ParseInt(string(val), 10, strconv.IntSize)
	if err != nil {
		return errJSON
	}
	*n = int(v)
	return nil
}

func readInt64(val []byte, n *int64) error {
	if string(val) == "null" {
		return nil
	}
	v, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil {
		return errJSON
	}
	*n = v
	return nil
}

func readUint32(val []byte, n *uint32) error {
	if string(val) == "null" {
		return nil
	}
	v, err := strconv.ParseUint(string(val), 10, 32)
	if err != nil {
		return errJSON
	}
	*n = uint32(v)
	return nil
}

func readString(val []byte, s *string) error {
	if string(val) == "null" {
		return nil
	}
	r := RawString(*s)
	if err := r.UnmarshalJSON(val); err != nil {
		return err
	}
	*s = string(r)
	return nil
}

func readTime(val []byte, t *time.Time) error {
	if string(val) == "null" {
		return nil
	}
	return t.UnmarshalJSON(val)
}
