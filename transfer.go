package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/tarx"
)

// FileUpload is one file for UploadFiles.
type FileUpload struct {
	Path    string // absolute, or relative to the working directory
	Content []byte
}

// FileUploadResponse is the outcome of one upload. Err is nil on success,
// else an *fs.PathError; ErrorCode turns it into deepagents' code.
type FileUploadResponse struct {
	Path string // the absolute path
	Err  error
}

// FileDownloadResponse is the outcome of one download.
type FileDownloadResponse struct {
	Path    string // the absolute path
	Content []byte // nil when Err is set
	Err     error
}

// ErrorCode returns deepagents' FileOperationError literal for a per-file
// error: "file_not_found", "permission_denied", "is_directory" or
// "invalid_path"; "" for nil and for an error that has no such code (a
// full disk, a file too large: test those with errors.Is).
func ErrorCode(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return proto.CodeNotFound
	case errors.Is(err, fs.ErrPermission):
		return proto.CodePermission
	case errors.Is(err, ErrIsDir):
		return proto.CodeIsDir
	case errors.Is(err, ErrInvalidPath), errors.Is(err, ErrNotDir):
		return proto.CodeInvalidPath
	}
	return ""
}

// UploadFiles writes files into the sandbox, each independently: files
// up to 1 MiB through the helper, larger ones through the engine's archive
// API (on Podman and on a pod, every file through the helper). A failure
// is reported in its response, in input order. Parent directories are
// created; files belong to the sandbox's user, get mode 0644 and the
// current time. A directory at a path is ErrIsDir. The returned error is for failures of the whole call (a closed
// sandbox, a cancelled context).
func (s *Sandbox) UploadFiles(ctx context.Context, files []FileUpload) (_ []FileUploadResponse, err error) {
	ctx, op := s.begin(ctx, "UploadFiles")
	defer op.end(&err)
	op.bytes(uploadBytes(files))
	out := make([]FileUploadResponse, len(files))
	var paths []string
	var idx []int
	for i, f := range files {
		p, err := s.abs("upload", f.Path)
		out[i] = FileUploadResponse{Path: p, Err: err}
		if p == "/" {
			out[i] = FileUploadResponse{Path: f.Path, Err: &fs.PathError{Op: "upload", Path: f.Path, Err: ErrIsDir}}
		}
		if out[i].Err == nil {
			paths, idx = append(paths, p), append(idx, i)
		} else {
			out[i].Path = f.Path
		}
	}
	// Small files (and all, on Podman) are written by the helper; large ones
	// stream through Docker's archive API.
	var bigPaths []string
	var bigIdx []int
	for j, p := range paths {
		i := idx[j]
		if !s.viaHelper(int64(len(files[i].Content))) {
			bigPaths, bigIdx = append(bigPaths, p), append(bigIdx, i)
			continue
		}
		_, err := s.fileCall(ctx, "upload", p, proto.Request{Op: proto.OpWrite, Path: p}, bytes.NewReader(files[i].Content))
		if fatal(ctx, err) {
			return nil, err
		}
		out[i].Err = err
	}
	paths, idx = bigPaths, bigIdx
	if len(paths) == 0 {
		return out, nil
	}
	res, err := s.call(ctx, proto.Request{Op: proto.OpPrepare, Paths: paths}, callOptions{shared: true})
	if err != nil {
		return nil, err
	}
	if len(res.Stats) != len(paths) {
		return nil, fmt.Errorf("%w: upload preflight answered %d of %d paths", ErrHelper, len(res.Stats), len(paths))
	}
	for j, st := range res.Stats {
		i, p := idx[j], paths[j]
		if st.Error != nil {
			out[i].Err = &fs.PathError{Op: "upload", Path: p, Err: st.Error.Err()}
			continue
		}
		if !archiveSafe(st.Resolved) {
			_, err := s.fileCall(ctx, "upload", p, proto.Request{Op: proto.OpWrite, Path: p}, bytes.NewReader(files[i].Content))
			if fatal(ctx, err) {
				return nil, err
			}
			out[i].Err = err
			continue
		}
		if err := s.putFile(ctx, st.Resolved, files[i].Content, res.UID, res.GID); err != nil {
			if fatal(ctx, err) {
				return nil, err
			}
			out[i].Err = &fs.PathError{Op: "upload", Path: p, Err: err}
		}
	}
	return out, nil
}

// helperTransferMax is the largest file that UploadFiles and DownloadFiles
// move through the helper (about a millisecond) rather than through
// Docker's archive API (tens of milliseconds, but as fast for big files).
// On Podman, and on an engine whose copies are execs of their own
// (engine.ExecCopier: a pod), every file takes the helper.
const helperTransferMax = 1 << 20

// viaHelper reports whether a file of size bytes moves through the helper.
func (s *Sandbox) viaHelper(size int64) bool {
	return s.podman || s.copyByExec || size <= helperTransferMax
}

// fatal reports an error that ends a whole transfer call, not one file.
func fatal(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	var pe *fs.PathError
	return ctx.Err() != nil || errors.Is(err, ErrGone) || errors.Is(err, ErrClosed) || errors.Is(err, ErrDaemonUnreachable) ||
		errors.Is(err, ErrPaused) ||
		!errors.As(err, &pe) && errors.Is(err, ErrHelper)
}

// putFile uploads a file atomically: under a temporary name in the same
// directory, renamed over p by the helper, so that a failure (a full disk,
// say) leaves the old file intact.
func (s *Sandbox) putFile(ctx context.Context, p string, content []byte, uid, gid int) error {
	tmp := path.Join(path.Dir(p), fmt.Sprintf(".%s.sandbox-upload-%d", path.Base(p), uploadSeq.Add(1)))
	if err := s.putTar(ctx, tmp, content, uid, gid); err != nil {
		_ = s.removeQuietly(ctx, tmp)
		return err
	}
	res, err := s.call(ctx, proto.Request{Op: proto.OpRename, Path: tmp, New: p}, callOptions{shared: true})
	if err != nil {
		return err
	}
	if res.Error != nil {
		_ = s.removeQuietly(ctx, tmp)
		return res.Error.Err()
	}
	return nil
}

var uploadSeq atomic.Int64

// removeQuietly deletes a leftover temporary file, ignoring failures. A
// file that the daemon's extraction left half-written (a full disk) still
// belongs to root; in a sticky directory (/tmp, the secure profile's
// scratch mounts) only its owner may delete it, so root tries again.
func (s *Sandbox) removeQuietly(ctx context.Context, p string) error {
	ctx = context.WithoutCancel(ctx)
	req := proto.Request{Op: proto.OpDelete, Path: p}
	res, err := s.call(ctx, req, callOptions{shared: true})
	if err == nil && res.Error != nil && errors.Is(res.Error.Err(), fs.ErrPermission) {
		res, err = s.call(ctx, req, callOptions{user: "0"})
	}
	if err == nil && res.Error != nil {
		err = res.Error.Err()
	}
	return err
}

// putTar streams a one-file tar into the file's directory.
func (s *Sandbox) putTar(ctx context.Context, p string, content []byte, uid, gid int) error {
	archive, err := tarx.NewReader(tarx.File{
		Name: path.Base(p), Content: content, Mode: 0o644, UID: uid, GID: gid, ModTime: time.Now(),
	})
	if err != nil {
		return err
	}
	wctx, prog, stop := watchProgress(ctx)
	defer stop()
	err = s.eng.CopyTo(wctx, s.id, path.Dir(p), prog.reader(archive))
	if err == nil {
		return nil
	}
	if err := stalled(ctx, wctx, err); err == errArchiveStalled {
		return err
	}
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return s.dockerErr("upload", err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %v", fs.ErrNotExist, err)
	case errors.Is(err, engine.ErrIsDir):
		return ErrIsDir
	case errors.Is(err, ErrNoSpace): // the engine's extraction failed
		return fmt.Errorf("%w: %v", ErrNoSpace, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %v", fs.ErrPermission, err)
	}
	return s.dockerErr("upload", err)
}

// DownloadFiles reads files out of the sandbox, each independently, in
// input order, as UploadFiles writes them: through the helper or the
// engine's archive API. Symlinks are followed; a
// directory is ErrIsDir; files the sandbox's user cannot read are
// fs.ErrPermission. Nothing is written to the host filesystem.
func (s *Sandbox) DownloadFiles(ctx context.Context, paths []string) (resps []FileDownloadResponse, err error) {
	ctx, op := s.begin(ctx, "DownloadFiles")
	defer func() { op.bytes(downloadBytes(resps)); op.end(&err) }()
	out := make([]FileDownloadResponse, len(paths))
	var abs []string
	var idx []int
	for i, raw := range paths {
		p, err := s.abs("download", raw)
		out[i] = FileDownloadResponse{Path: p, Err: err}
		if err != nil {
			out[i].Path = raw
			continue
		}
		abs, idx = append(abs, p), append(idx, i)
	}
	if len(abs) == 0 {
		return out, nil
	}
	res, err := s.call(ctx, proto.Request{Op: proto.OpStat, Paths: abs}, callOptions{shared: true})
	if err != nil {
		return nil, err
	}
	if len(res.Stats) != len(abs) {
		return nil, fmt.Errorf("%w: download preflight answered %d of %d paths", ErrHelper, len(res.Stats), len(abs))
	}
	for j, st := range res.Stats {
		i, p := idx[j], abs[j]
		if st.Error != nil {
			out[i].Err = &fs.PathError{Op: "download", Path: p, Err: st.Error.Err()}
			continue
		}
		if st.Size > s.opts.maxDownload {
			out[i].Err = &fs.PathError{Op: "download", Path: p, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, st.Size, s.opts.maxDownload)}
			continue
		}
		var content []byte
		if s.viaHelper(st.Size) || !archiveSafe(st.Resolved) {
			content, err = s.catFile(ctx, st.Resolved, st.Size)
		} else {
			content, err = s.getFile(ctx, st.Resolved)
		}
		if err != nil {
			if fatal(ctx, err) {
				return nil, err
			}
			out[i].Err = &fs.PathError{Op: "download", Path: p, Err: err}
			continue
		}
		out[i].Content = content
	}
	return out, nil
}

// getFile reads the single regular file of an archive GET.
func (s *Sandbox) getFile(ctx context.Context, p string) ([]byte, error) {
	wctx, prog, stop := watchProgress(ctx)
	defer stop()
	rc, err := s.eng.CopyFrom(wctx, s.id, p)
	if err != nil {
		if err := stalled(ctx, wctx, err); err == errArchiveStalled {
			return nil, err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		}
		return nil, s.dockerErr("download", err)
	}
	defer rc.Close()
	content, err := tarx.ReadFile(prog.reader(rc), s.opts.maxDownload)
	err = stalled(ctx, wctx, err)
	switch {
	case errors.Is(err, tarx.ErrIsDir):
		return nil, ErrIsDir
	case errors.Is(err, tarx.ErrNotRegular):
		return nil, ErrNotRegular
	case errors.Is(err, tarx.ErrTooLarge):
		return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return content, err
}

// catFile reads the regular file p, of size bytes when it was looked at,
// through the helper: the path takes the shared channel and the sandbox
// user's view, and avoids engines whose archive API mishandles unusual
// names. The host holds size bytes, whatever the helper sends: it is asked
// for at most size+1 bytes, the last of which says that the file grew
// meanwhile; more is a lie.
func (s *Sandbox) catFile(ctx context.Context, p string, size int64) ([]byte, error) {
	buf := &boundedBuffer{b: make([]byte, 0, size+1), max: size + 1}
	res, err := s.call(ctx, proto.Request{Op: proto.OpCat, Path: p, Limit: int(size)}, callOptions{stdout: buf, shared: true})
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, res.Error.Err()
	}
	if int64(len(buf.b)) > size {
		return nil, fmt.Errorf("the file grew while it was read (it had %d bytes); read it again", size)
	}
	return buf.b, nil
}

// boundedBuffer takes at most max bytes: the helper sends no more than it
// is asked for, so more is a lie (errHelperLied), which ends the call.
type boundedBuffer struct {
	b   []byte
	max int64
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	if int64(len(p)) > w.max-int64(len(w.b)) {
		return 0, fmt.Errorf("%w: more than the %d bytes asked for", errHelperLied, w.max)
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// archiveSafe reports whether Docker's archive API can be trusted with the
// path p. A path that is not valid UTF-8 is not: Docker 20.10 answered an
// archive GET of ".../in\xff" with the content of ".../in\uFFFD", another
// file. Such paths go through the helper, whose wire keeps names byte for
// byte, whatever the file's size.
func archiveSafe(p string) bool { return utf8.ValidString(p) }

// archiveStall is how long a stream of Docker's archive API (an upload or
// a download of a large file) may make no progress before it is given up:
// a frozen daemon must not hold a call for ever, even one with no deadline.
const archiveStall = 15 * time.Second

var errArchiveStalled = fmt.Errorf("%w: the archive stream made no progress for %v", ErrDaemonUnreachable, archiveStall)

// progress ends a context when the stream it watches makes no progress for
// archiveStall.
type progress struct {
	last atomic.Int64 // unix nanoseconds
}

// watchProgress returns a context that ends, with errArchiveStalled as its
// cause, when the returned progress is not touched for archiveStall; stop
// releases it.
func watchProgress(ctx context.Context) (context.Context, *progress, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	p := &progress{}
	p.touch()
	done := make(chan struct{})
	go watchSilence(done, func() time.Duration { return time.Since(time.Unix(0, p.last.Load())) }, archiveStall, func() { cancel(errArchiveStalled) })
	return ctx, p, func() { close(done); cancel(nil) }
}

// watchSilence calls silent, once, when quiet (how long what is awaited
// has been silent; 0 while nothing is) is more than limit. It looks every
// proto.AliveInterval until stop is closed.
func watchSilence(stop <-chan struct{}, quiet func() time.Duration, limit time.Duration, silent func()) {
	t := time.NewTicker(proto.AliveInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if quiet() > limit {
				silent()
				return
			}
		}
	}
}

func (p *progress) touch() { p.last.Store(time.Now().UnixNano()) }

// reader counts every read of r as progress.
func (p *progress) reader(r io.Reader) io.Reader { return progressReader{r, p} }

type progressReader struct {
	r io.Reader
	p *progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.touch()
	return n, err
}

// stalled returns errArchiveStalled when the watch, not the caller's
// context (parent), ended the stream, else err.
func stalled(parent, watched context.Context, err error) error {
	if err != nil && parent.Err() == nil && context.Cause(watched) == errArchiveStalled {
		return errArchiveStalled
	}
	return err
}
