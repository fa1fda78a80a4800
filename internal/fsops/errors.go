package fsops

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	ErrInvalidPath         = errors.New("invalid path")
	ErrNotDir              = errors.New("not a directory")
	ErrIsDir               = errors.New("is a directory")
	ErrNotRegular          = errors.New("not a regular file")
	ErrNotText             = errors.New("not a text file")
	ErrStringNotFound      = errors.New("string not found")
	ErrMultipleOccurrences = errors.New("string appears multiple times")
	ErrOffsetOutOfRange    = errors.New("line offset exceeds file length")
	ErrBinaryTooLarge      = errors.New("binary file exceeds maximum preview size")
	ErrInvalidPattern      = errors.New("invalid pattern")
	ErrPatternTooBroad     = errors.New("pattern too broad")
)

// OccurrencesError reports that an edit's old string occurs Count times
// while a single replacement was asked for. It matches ErrMultipleOccurrences.
type OccurrencesError struct {
	Count int
}

// Error implements error.
func (e *OccurrencesError) Error() string {
	return fmt.Sprintf("string appears multiple times (%d occurrences)", e.Count)
}

// Unwrap returns ErrMultipleOccurrences.
func (e *OccurrencesError) Unwrap() error { return ErrMultipleOccurrences }

// offsetError carries the deepagents text for a read offset past the end.
type offsetError struct {
	offset, lines int
}

func (e *offsetError) Error() string {
	return fmt.Sprintf("Line offset %d exceeds file length (%d lines)", e.offset, e.lines)
}

func (e *offsetError) Unwrap() error { return ErrOffsetOutOfRange }

// binaryTooLargeError carries the deepagents text for an oversized binary read.
type binaryTooLargeError struct {
	limit int
}

func (e *binaryTooLargeError) Error() string {
	return fmt.Sprintf("Binary file exceeds maximum preview size of %d bytes", e.limit)
}

func (e *binaryTooLargeError) Unwrap() error { return ErrBinaryTooLarge }

// kindError is an error with its own text that matches several sentinels.
type kindError struct {
	msg  string
	errs []error
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return e.errs }

// errDirectory is returned when a file operation is given a directory: it
// matches both ErrIsDir and ErrNotRegular.
var errDirectory = &kindError{msg: "is a directory", errs: []error{ErrIsDir, ErrNotRegular}}
