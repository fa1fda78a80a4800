package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/dockersandbox/sandbox"
)

// The file tools: ls, write_file, edit_file and delete.

func (e *env) ls(ctx context.Context, a *args) Result {
	dir, _ := a.path("path", true)
	if r, bad := a.done(); bad {
		return r
	}
	p, msg := e.resolve(dir)
	if msg != "" {
		return errorText(msg)
	}
	infos, err := e.sb.Ls(ctx, p)
	if err != nil {
		return errorText("Error: " + pathError(p, err))
	}
	paths := make([]string, len(infos))
	for i, fi := range infos {
		paths[i] = fi.Path
	}
	return text(formatPaths(paths))
}

// pathError is deepagents' error for a directory argument of ls, glob and
// grep: "Path 'p': code".
func pathError(p string, err error) string {
	var code string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = "path_not_found"
	case errors.Is(err, sandbox.ErrNotDir):
		code = "not_a_directory"
	case errors.Is(err, fs.ErrPermission):
		code = "permission_denied"
	case errors.Is(err, sandbox.ErrInvalidPattern):
		code = "invalid_pattern"
	case errors.Is(err, sandbox.ErrPatternTooBroad):
		code = "pattern_too_broad"
	case errors.Is(err, sandbox.ErrNotRegular):
		code = "not_a_file"
	case errors.Is(err, sandbox.ErrInvalidPath):
		code = "invalid_path"
	default:
		code = innerMessage(err)
	}
	return fmt.Sprintf("Path '%s': %s", showName(p), code)
}

func (e *env) writeFile(ctx context.Context, a *args) Result {
	filePath, _ := a.path("file_path", true)
	content, _ := a.str("content", true)
	if r, bad := a.done(); bad {
		return r
	}
	p, msg := e.resolve(filePath)
	if msg != "" {
		return errorText(msg)
	}
	if err := e.sb.Write(ctx, p, []byte(content)); err != nil {
		return errorf("Failed to write file '%s': %s", showName(p), fileErrorCode(err))
	}
	return text("Updated file " + showName(p))
}

// fileErrorCode is deepagents' FileOperationError literal for err
// (file_not_found, permission_denied, is_directory, invalid_path), or the
// error's own message.
func fileErrorCode(err error) string {
	if code := sandbox.ErrorCode(err); code != "" {
		return code
	}
	return innerMessage(err)
}

func (e *env) editFile(ctx context.Context, a *args) Result {
	filePath, _ := a.path("file_path", true)
	oldString, _ := a.str("old_string", true)
	newString, _ := a.str("new_string", true)
	replaceAll, _ := a.boolean("replace_all")
	if r, bad := a.done(); bad {
		return r
	}
	p, msg := e.resolve(filePath)
	if msg != "" {
		return errorText(msg)
	}
	n, err := e.sb.Edit(ctx, p, oldString, newString, replaceAll)
	if err != nil {
		return errorText(editError(p, oldString, err))
	}
	return text(fmt.Sprintf("Successfully replaced %d instance(s) of the string in '%s'", n, p))
}

// editError is deepagents' _map_edit_error text.
func editError(p, oldString string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("Error: File '%s' not found", showName(p))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("Error: Permission denied editing file '%s'", showName(p))
	case errors.Is(err, sandbox.ErrIsDir), errors.Is(err, sandbox.ErrNotRegular):
		return fmt.Sprintf("Error: '%s' is not a regular file", showName(p))
	case errors.Is(err, sandbox.ErrNotText):
		return fmt.Sprintf("Error: File '%s' is not a text file", showName(p))
	case errors.Is(err, sandbox.ErrStringNotFound):
		return fmt.Sprintf("Error: String not found in file: '%s'", oldString)
	case errors.Is(err, sandbox.ErrMultipleOccurrences):
		return fmt.Sprintf("Error: String '%s' appears multiple times. Use replace_all=True to replace all occurrences.", oldString)
	}
	return fmt.Sprintf("Error editing file '%s': %s", showName(p), fileErrorCode(err))
}

func (e *env) delete(ctx context.Context, a *args) Result {
	filePath, _ := a.path("file_path", true)
	if r, bad := a.done(); bad {
		return r
	}
	p, msg := e.resolve(filePath)
	if msg != "" {
		return errorText(msg)
	}
	if err := e.sb.Delete(ctx, p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errorf("Error: '%s' not found", showName(p))
		}
		return errorf("Error deleting file '%s': %s", showName(p), fileErrorCode(err))
	}
	return text("Deleted " + showName(p))
}
