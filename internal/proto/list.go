package proto

import (
	"encoding/json"
	"fmt"
)

// List is a slice in a Result that decodes at most MaxItems elements: the
// count is checked before anything is allocated, since an element's
// shortest JSON ({}) is much smaller than the struct it decodes into.
type List[T any] []T

// UnmarshalJSON decodes a JSON array of at most MaxItems elements (or null).
func (l *List[T]) UnmarshalJSON(data []byte) error {
	n, err := countElements(data)
	if err != nil {
		return err
	}
	if n > MaxItems {
		return fmt.Errorf("%w: a list of %d items, more than %d", ErrBadFrame, n, MaxItems)
	}
	s := make([]T, 0, n)
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if n == 0 && string(data) == "null" {
		s = nil
	}
	*l = s
	return nil
}

// countElements counts the elements of the JSON array data (0 for null),
// which encoding/json has already checked to be valid JSON.
func countElements(data []byte) (int, error) {
	i := 0
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	if i < len(data) && data[i] == 'n' {
		return 0, nil
	}
	if i == len(data) || data[i] != '[' {
		return 0, fmt.Errorf("%w: a list that is not a JSON array", ErrBadFrame)
	}
	depth, n, inString, escaped, empty := 0, 0, false, false, true
	for _, c := range data[i:] {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			n++
		}
		if depth == 1 && !isSpace(c) && c != '[' && c != ',' {
			empty = false
		} else if depth > 1 {
			empty = false
		}
	}
	if empty {
		return 0, nil
	}
	return n + 1, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
