// Package fsops implements the deepagents 0.7 sandbox file operations (read,
// edit, ls, glob, grep) natively against an [io/fs.FS] that represents a
// container's root directory "/".
//
// All functions take absolute slash paths ("/workspace/a.txt"; "/" is the
// root) and return absolute slash paths. Errors are [*fs.PathError] values
// whose Err is either the file system's own error (so errors.Is with
// [fs.ErrNotExist] or [fs.ErrPermission] works) or one of the sentinels of
// this package. Only regular files are ever opened; for that guarantee fsys
// should implement [fs.StatFS] (os.DirFS and fstest.MapFS do), because
// [fs.Stat] otherwise has to open the file.
package fsops
