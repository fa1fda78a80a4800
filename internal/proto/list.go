package proto

import (
	"encoding/json"
	"fmt"

	"github.com/dockersandbox/sandbox/internal/fsops"
)

// List is a slice in a Result that decodes at most MaxItems elements: the
// count is checked before anything is allocated, since an element's
// shortest JSON ({}) is much smaller than the struct it decodes into.
type List[T any] []T

// UnmarshalJSON decodes a JSON array of at most MaxItems elements (or null).
func (l *List[T]) UnmarshalJSON(data []byte) error {
	n, err := fsops.CountArray(data)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadFrame, err)
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
