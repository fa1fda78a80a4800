package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/helperbin"
)

// Errors returned by a sandbox. Test for them with errors.Is. File
// operations return *fs.PathError values; besides the errors below, they
// wrap fs.ErrNotExist and fs.ErrPermission, so the usual checks work.
var (
	// ErrIsDir: the path is a directory where a file is needed.
	ErrIsDir = fsops.ErrIsDir
	// ErrNotDir: the path, or one of its parents, is not a directory.
	ErrNotDir = fsops.ErrNotDir
	// ErrInvalidPath: the path is empty, contains a NUL byte, or is otherwise unusable.
	ErrInvalidPath = fsops.ErrInvalidPath
	// ErrNotRegular: the path is not a regular file (a device, FIFO or socket).
	ErrNotRegular = fsops.ErrNotRegular
	// ErrNotText: Edit found a file that is not valid UTF-8.
	ErrNotText = fsops.ErrNotText
	// ErrStringNotFound: Edit did not find the old string.
	ErrStringNotFound = fsops.ErrStringNotFound
	// ErrMultipleOccurrences: Edit found the old string more than once
	// without replaceAll.
	ErrMultipleOccurrences = fsops.ErrMultipleOccurrences
	// ErrOffsetOutOfRange: Read was asked to start beyond the file's last line.
	ErrOffsetOutOfRange = fsops.ErrOffsetOutOfRange
	// ErrBinaryTooLarge: Read found a binary file too large to return as base64.
	ErrBinaryTooLarge = fsops.ErrBinaryTooLarge
	// ErrInvalidPattern: a glob or grep pattern is empty or contains "..".
	ErrInvalidPattern = fsops.ErrInvalidPattern
	// ErrPatternTooBroad: a glob's braces expand to too many patterns.
	ErrPatternTooBroad = fsops.ErrPatternTooBroad
	// ErrNoSpace: the sandbox's disk (or tmpfs) is full. Write and
	// UploadFiles leave the old file intact when it happens.
	ErrNoSpace error = syscall.ENOSPC
	// ErrTooLarge: a download exceeds the sandbox's max download bytes.
	ErrTooLarge = errors.New("file too large")
	// ErrUnsupportedArch: the image's architecture has no helper build
	// (amd64 and arm64 are supported).
	ErrUnsupportedArch = helperbin.ErrUnsupportedArch

	// ErrImageNotFound: the image is not on the daemon and was not pulled
	// (pull policy, or the pull failed).
	ErrImageNotFound = errors.New("sandbox: image not found")
	// ErrDaemonUnreachable: the Docker daemon did not answer.
	ErrDaemonUnreachable = errors.New("sandbox: docker daemon unreachable")
	// ErrClosed: the sandbox was closed.
	ErrClosed = errors.New("sandbox: closed")
	// ErrGone: the sandbox's container stopped or was removed from outside.
	ErrGone = errors.New("sandbox: container is gone")
	// ErrInvalidOption: an option value was rejected by New.
	ErrInvalidOption = errors.New("sandbox: invalid option")
	// ErrEmptyCommand: Execute or Command got an empty command.
	ErrEmptyCommand = errors.New("sandbox: command must be a non-empty string")
	// ErrHelper: the in-container helper failed or broke the protocol.
	ErrHelper = errors.New("sandbox: helper failed")
	// ErrProtocolVersion: the helper in the container speaks another
	// protocol version than this library (it also matches ErrHelper).
	ErrProtocolVersion = fmt.Errorf("%w: protocol version mismatch", ErrHelper)
)
