package proto

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/dockersandbox/sandbox/internal/fsops"
)

// Error is an operation failure as it crosses the wire: a stable code and
// the innermost message.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes. The first four are deepagents' FileOperationError literals.
const (
	CodeNotFound         = "file_not_found"
	CodePermission       = "permission_denied"
	CodeIsDir            = "is_directory"
	CodeInvalidPath      = "invalid_path"
	CodeNotDir           = "not_a_directory"
	CodeNotRegular       = "not_a_file"
	CodeNotText          = "not_a_text_file"
	CodeStringNotFound   = "string_not_found"
	CodeMultiple         = "multiple_occurrences"
	CodeOffsetOutOfRange = "offset_out_of_range"
	CodeBinaryTooLarge   = "binary_too_large"
	CodeInvalidPattern   = "invalid_pattern"
	CodePatternTooBroad  = "pattern_too_broad"
	CodeNoSpace          = "no_space"
	CodeBadRequest       = "bad_request"
	CodeInternal         = "internal_error"
)

// codes maps each code to the sentinel that errors.Is finds on the library side.
var codes = []struct {
	code string
	err  error
}{
	{CodeNotFound, fs.ErrNotExist},
	{CodePermission, fs.ErrPermission},
	{CodeIsDir, fsops.ErrIsDir},
	{CodeNotDir, fsops.ErrNotDir},
	{CodeInvalidPath, fsops.ErrInvalidPath},
	{CodeNotRegular, fsops.ErrNotRegular},
	{CodeNotText, fsops.ErrNotText},
	{CodeStringNotFound, fsops.ErrStringNotFound},
	{CodeMultiple, fsops.ErrMultipleOccurrences},
	{CodeOffsetOutOfRange, fsops.ErrOffsetOutOfRange},
	{CodeBinaryTooLarge, fsops.ErrBinaryTooLarge},
	{CodeInvalidPattern, fsops.ErrInvalidPattern},
	{CodePatternTooBroad, fsops.ErrPatternTooBroad},
	{CodeNoSpace, syscall.ENOSPC},
	{CodeIsDir, syscall.EISDIR},
	{CodeNotDir, syscall.ENOTDIR},
	{CodeInvalidPath, syscall.ENAMETOOLONG},
	{CodeInvalidPath, syscall.EINVAL},
}

// ErrorOf turns a helper-side error into its wire form.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &Error{Code: c.code, Message: msg}
		}
	}
	return &Error{Code: CodeInternal, Message: msg}
}

// Sentinel returns the error that a code stands for, or nil for an unknown
// code.
func Sentinel(code string) error {
	for _, c := range codes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

// Err is the library-side form of an Error: its message, and errors.Is
// matches the code's sentinel.
func (e *Error) Err() error {
	return &remoteError{msg: e.Message, code: e.Code, sentinel: Sentinel(e.Code)}
}

type remoteError struct {
	msg      string
	code     string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Unwrap() error { return e.sentinel }

// Code returns the wire code of an error made by (*Error).Err, or "".
func Code(err error) string {
	var re *remoteError
	if errors.As(err, &re) {
		return re.code
	}
	return ""
}
