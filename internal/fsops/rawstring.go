package fsops

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"
)

// RawString is a string whose JSON form keeps its bytes. File names,
// patterns and file text are bytes, and encoding/json would turn every byte
// that is not UTF-8 into U+FFFD ("x\xff" and "x\uFFFD" would travel as the
// same name). A RawString that is valid UTF-8 is a plain JSON string, as a
// string would be; any other is the object {"b64":"<standard base64 of the
// bytes>"}, which a peer decoding into a plain string refuses instead of
// mangling.
type RawString string

// MarshalJSON implements json.Marshaler.
func (s RawString) MarshalJSON() ([]byte, error) {
	return s.AppendJSON(make([]byte, 0, len(s)+2)), nil
}

// AppendJSON appends the JSON form of s to b.
func (s RawString) AppendJSON(b []byte) []byte {
	if !utf8.ValidString(string(s)) {
		b = append(b, `{"b64":"`...)
		b = base64.StdEncoding.AppendEncode(b, []byte(s))
		return append(b, `"}`...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

var errRawString = errors.New(`cannot unmarshal into a string: want a JSON string or {"b64":"..."}`)

// UnmarshalJSON implements json.Unmarshaler: it accepts a JSON string (as
// encoding/json decodes it) or {"b64":"..."}; null leaves s as it is.
func (s *RawString) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0:
		return errRawString
	case data[0] == '"':
		str, err := unquote(data)
		if err != nil {
			return err
		}
		*s = RawString(str)
		return nil
	case data[0] == '{':
		var b64 []byte
		err := eachField(data, func(key, val []byte) error {
			if string(key) != "b64" || len(val) < 2 || val[0] != '"' {
				return errRawString
			}
			b64 = val[1 : len(val)-1]
			return nil
		})
		if err != nil {
			return err
		}
		if b64 == nil {
			return errRawString
		}
		raw, err := base64.StdEncoding.AppendDecode(nil, b64)
		if err != nil {
			return fmt.Errorf("%w: %v", errRawString, err)
		}
		*s = RawString(raw)
		return nil
	case string(data) == "null":
		return nil
	}
	return errRawString
}

// RawStrings converts a []string to a []RawString (nil stays nil).
func RawStrings(in []string) []RawString {
	if in == nil {
		return nil
	}
	out := make([]RawString, len(in))
	for i, s := range in {
		out[i] = RawString(s)
	}
	return out
}

// Strings converts a []RawString back to a []string (nil stays nil).
func Strings(in []RawString) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
