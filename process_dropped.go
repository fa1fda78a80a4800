package sandbox

import (
	"errors"
	"fmt"
)

// ErrOutputDropped reports that Follow skipped output the process's log no
// longer held when it was read (the writer was slower than the process and
// the log wrapped). The error is an *OutputDroppedError, which counts the
// bytes.
var ErrOutputDropped = errors.New("sandbox: process output dropped")

// OutputDroppedError is Follow's report of skipped output: Dropped bytes
// in all, the first of them at cursor First. errors.Is(err,
// ErrOutputDropped) holds for it.
type OutputDroppedError struct {
	Dropped int64 // bytes skipped in all
	First   int64 // cursor of the first byte skipped
}

func (e *OutputDroppedError) Error() string {
	return fmt.Sprintf("%v: %d bytes from cursor %d on were not in the log when read (a larger WithLogSize keeps more)", ErrOutputDropped, e.Dropped, e.First)
}

// Is makes errors.Is(err, ErrOutputDropped) hold.
func (e *OutputDroppedError) Is(target error) bool { return target == ErrOutputDropped }

// dropTally counts what a Follow skipped.
type dropTally struct{ err *OutputDroppedError }

// add counts out's dropped bytes.
func (d *dropTally) add(out ProcessOutput) {
	if out.Dropped <= 0 {
		return
	}
	if d.err == nil {
		d.err = &OutputDroppedError{First: out.Cursor - out.Dropped}
	}
	d.err.Dropped += out.Dropped
}

// join adds the tally to err (nil: the tally alone, if any).
func (d *dropTally) join(err error) error {
	if d.err == nil {
		return err
	}
	if err == nil {
		return d.err
	}
	return errors.Join(err, d.err)
}
