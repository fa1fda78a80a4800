package helper

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// root is the container's filesystem as the file operations see it.
var root = fsops.DirFS("/") // names are bytes; os.DirFS refuses non-UTF-8 ones

// writeFile replaces path's content with what in yields, creating parent
// directories. The replacement is atomic where the directory allows it: a
// failure (a full disk, say) leaves the old content in place.
func writeFile(path string, in io.Reader) error {
	if in == nil {
		in = eofReader{}
	}
	if !filepath.IsAbs(path) {
		return &fs.PathError{Op: "write", Path: path, Err: fsops.ErrInvalidPath}
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved // write through a symlink, not over it
	}
	if fi, err := os.Stat(target); err == nil && fi.IsDir() {
		return &fs.PathError{Op: "write", Path: path, Err: fsops.ErrIsDir}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return replaceFile(target, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// replaceFile writes a new version of path through fill: into a temporary
// file renamed over path, keeping an existing file's mode and owner. When
// the directory is not writable but the file is, it writes in place.
func replaceFile(path string, fill func(io.Writer) error) error {
	mode := fs.FileMode(0o644)
	old, statErr := os.Stat(path)
	if statErr == nil {
		mode = old.Mode().Perm()
		// Renaming over the file would bypass its permissions.
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sandbox-*")
	if err != nil {
		if statErr == nil && errors.Is(err, fs.ErrPermission) {
			return writeInPlace(path, fill)
		}
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if statErr == nil {
		if st, isUnix := old.Sys().(*syscall.Stat_t); isUnix && os.Getuid() == 0 {
			_ = tmp.Chown(int(st.Uid), int(st.Gid))
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	return nil
}

func writeInPlace(path string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func editFile(path, old, new string, replaceAll bool) (int, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(target)
	if err != nil {
		return 0, err
	}
	if fi.IsDir() {
		return 0, &fs.PathError{Op: "edit", Path: path, Err: fsops.ErrIsDir}
	}
	if !fi.Mode().IsRegular() {
		return 0, &fs.PathError{Op: "edit", Path: path, Err: fsops.ErrNotRegular}
	}
	content, err := os.ReadFile(target)
	if err != nil {
		return 0, err
	}
	out, n, err := fsops.Edit(content, old, new, replaceAll)
	if err != nil {
		return 0, err
	}
	return n, replaceFile(target, func(w io.Writer) error {
		_, err := w.Write(out)
		return err
	})
}

func deletePath(path string) error {
	if !filepath.IsAbs(path) || filepath.Clean(path) == "/" {
		return &fs.PathError{Op: "delete", Path: path, Err: fsops.ErrInvalidPath}
	}
	if _, err := os.Lstat(path); err != nil {
		return err
	}
	return os.RemoveAll(path)
}

// statAll checks paths for a download: each must resolve to a regular file
// that the sandbox user may read.
func statAll(paths []string) []proto.Stat {
	out := make([]proto.Stat, len(paths))
	for i, p := range paths {
		out[i] = statOne(p)
	}
	return out
}

func statOne(path string) proto.Stat {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return proto.Stat{Error: proto.ErrorOf(err)}
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return proto.Stat{Error: proto.ErrorOf(err)}
	}
	st := proto.Stat{Resolved: resolved, IsDir: fi.IsDir(), Size: fi.Size(), ModTime: fi.ModTime()}
	switch {
	case fi.IsDir():
		st.Error = &proto.Error{Code: proto.CodeIsDir, Message: "is a directory"}
	case !fi.Mode().IsRegular():
		st.Error = &proto.Error{Code: proto.CodeNotRegular, Message: "not a regular file"}
	default:
		// O_NONBLOCK: never hang, even if the file became a FIFO meanwhile.
		f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			st.Error = proto.ErrorOf(err)
		} else {
			f.Close()
		}
	}
	return st
}

// prepareAll readies paths for an upload: parents are created, and each
// target must not be a directory and must be writable by the sandbox user.
func prepareAll(paths []string) []proto.Stat {
	out := make([]proto.Stat, len(paths))
	for i, p := range paths {
		out[i] = prepareOne(p)
	}
	return out
}

func prepareOne(path string) proto.Stat {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved // upload through a symlink, not over it
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return proto.Stat{Error: proto.ErrorOf(err)}
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return proto.Stat{Error: &proto.Error{Code: proto.CodeIsDir, Message: "is a directory"}}
		}
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return proto.Stat{Error: proto.ErrorOf(&fs.PathError{Op: "open", Path: path, Err: err})}
		}
	} else if err := syscall.Access(dir, 2|1 /* W_OK|X_OK */); err != nil {
		return proto.Stat{Error: proto.ErrorOf(&fs.PathError{Op: "open", Path: dir, Err: err})}
	}
	return proto.Stat{Resolved: path}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// renameUpload moves an uploaded temporary file over its target, keeping the
// target's mode when it existed. A large old content is kept by a hard link
// while the rename replaces it, and freed after the answer (see removeLater):
// freeing a large file's blocks can take tens of milliseconds (on a
// filesystem mounted with discard, say), which the caller need not wait for.
func renameUpload(tmp, target string) error {
	fi, err := os.Stat(target)
	exists := err == nil
	if exists && fi.IsDir() {
		os.Remove(tmp)
		return &fs.PathError{Op: "upload", Path: target, Err: fsops.ErrIsDir}
	}
	if exists {
		_ = os.Chmod(tmp, fi.Mode().Perm())
	}
	old := tmp + ".old"
	keepOld := exists && fi.Mode().IsRegular() && fi.Size() >= lazyFreeMin && os.Link(target, old) == nil
	if err := os.Rename(tmp, target); err != nil {
		if keepOld {
			os.Remove(old)
		}
		return err
	}
	if keepOld {
		removeLater(old)
	}
	return nil
}

// lazyFreeMin is the size from which renameUpload frees an old content
// after answering.
const lazyFreeMin = 1 << 20

// removals are deletions that run after their request was answered; Serve
// waits for them before it returns.
var removals sync.WaitGroup

// removeLater deletes p in the background.
func removeLater(p string) {
	removals.Add(1)
	go func() {
		defer removals.Done()
		os.Remove(p)
	}()
}

// catFile sends the regular file at req.Path as output frames: at most
// req.Limit+1 bytes, so that the library can tell a file that grew past
// its limit. Count is the file's size when opened.
func catFile(ctx context.Context, req proto.Request, send func(proto.Kind, []byte) error) *proto.Result {
	// O_NONBLOCK: opening a FIFO must not hang; it is refused below.
	f, err := os.OpenFile(req.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return &proto.Result{Error: proto.ErrorOf(err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return &proto.Result{Error: proto.ErrorOf(err)}
	case fi.IsDir():
		return &proto.Result{Error: &proto.Error{Code: proto.CodeIsDir, Message: "is a directory"}}
	case !fi.Mode().IsRegular():
		return &proto.Result{Error: &proto.Error{Code: proto.CodeNotRegular, Message: "not a regular file"}}
	}
	if req.Offset > 0 {
		if _, err := f.Seek(int64(req.Offset), io.SeekStart); err != nil {
			return &proto.Result{Error: proto.ErrorOf(err)}
		}
	}
	r := io.LimitReader(f, int64(req.Limit)+1)
	buf := make([]byte, proto.ChunkSize)
	for ctx.Err() == nil {
		n, err := r.Read(buf)
		if n > 0 {
			if send(proto.KindStdout, buf[:n]) != nil {
				break
			}
		}
		if err != nil {
			if err != io.EOF {
				return &proto.Result{Error: proto.ErrorOf(err)}
			}
			break
		}
	}
	return &proto.Result{Count: int(fi.Size()), Offset: int64(req.Offset)}
}

// infoOf describes path, symlinks followed (as os.Stat does).
func infoOf(path string) (fsops.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fsops.FileInfo{}, err
	}
	return fsops.FileInfo{Path: path, IsDir: fi.IsDir(), Size: fi.Size(), ModTime: fi.ModTime(), Mode: fi.Mode()}, nil
}
