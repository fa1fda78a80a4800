package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"sync"

	"github.com/dockersandbox/sandbox/internal/proto"
)

// FS is the sandbox's file system as an io/fs file system, as the
// sandbox's user sees it. It implements fs.FS, fs.StatFS, fs.ReadDirFS,
// fs.ReadFileFS and fs.SubFS, so fs.WalkDir, fs.Glob, fs.ReadFile,
// template.ParseFS, http.FS and testing/fstest work on a sandbox.
//
// Names are fs.ValidPath names relative to the container's root "/":
// "etc/passwd", "workspace/main.go", "." for the root itself. Use Sub (or
// fs.Sub) for another root, e.g. the working directory:
//
//	work, err := fs.Sub(sb.FS(ctx), strings.TrimPrefix(sb.WorkingDir(), "/"))
//
// As with os.DirFS, symbolic links are followed by Open, Stat and ReadFile
// (and may lead out of a Sub's directory); ReadDir reports them as links.
//
// Every operation is one request or more to the in-container helper on
// the sandbox's shared channel, within the context given to
// Sandbox.FS. Open streams: a file's bytes are fetched in ranges as
// they are read (at most 4 MiB held per open file), never the whole file
// at once. ReadFile holds the whole file, so it fails with ErrTooLarge past
// the sandbox's max download bytes (see WithMaxDownloadBytes). Errors are
// *fs.PathError values carrying the name asked for, so errors.Is(err,
// fs.ErrNotExist) and the like work. An FS is safe for concurrent use.
type FS struct {
	s    *Sandbox
	ctx  context.Context
	root string // absolute, clean
}

// FS returns the sandbox's file system, rooted at "/", whose operations
// run within ctx (a nil ctx is context.Background()).
func (s *Sandbox) FS(ctx context.Context) *FS {
	if ctx == nil {
		ctx = context.Background()
	}
	return &FS{s: s, ctx: ctx, root: "/"}
}

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.SubFS      = (*FS)(nil)
)

// abs returns the absolute path of name, which must be an fs.ValidPath
// name (else fs.ErrInvalid).
func (f *FS) abs(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return path.Join(f.root, name), nil
}

// rename makes err, a failure on the absolute path p, speak of name.
func rename(err error, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

// Open opens the named file for reading. A directory opens as an
// fs.ReadDirFile. A regular file's bytes are read through the helper as
// the caller reads them; the returned file also implements io.Seeker and
// io.ReaderAt. Reading a device, FIFO or socket fails with ErrNotRegular.
func (f *FS) Open(name string) (_ fs.File, err error) {
	ctx, op := f.s.begin(f.ctx, "FS.Open")
	defer op.end(&err)
	op.path(name)
	p, err := f.abs("open", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.s.info(ctx, "open", p)
	if err != nil {
		return nil, rename(err, name)
	}
	return &file{fsys: f, name: name, path: p, info: named{fileStat{fi}, path.Base(name)}}, nil
}

// Stat describes the named file, following symbolic links.
func (f *FS) Stat(name string) (_ fs.FileInfo, err error) {
	ctx, op := f.s.begin(f.ctx, "FS.Stat")
	defer op.end(&err)
	op.path(name)
	p, err := f.abs("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.s.info(ctx, "stat", p)
	if err != nil {
		return nil, rename(err, name)
	}
	return named{fileStat{fi}, path.Base(name)}, nil
}

// ReadDir lists the named directory, sorted by name, in one request. As
// in os.ReadDir, entries describe the directory's members themselves: a
// symbolic link is of type fs.ModeSymlink, and its Info describes the link.
// A directory whose listing exceeds what one answer of the helper holds
// (16 MiB, some 100,000 entries) fails with an error saying so.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.abs("readdir", name)
	if err != nil {
		return nil, err
	}
	return f.readDir(name, p)
}

func (f *FS) readDir(name, p string) ([]fs.DirEntry, error) {
	infos, err := f.s.Ls(f.ctx, p)
	if err != nil {
		return nil, rename(err, name)
	}
	out := make([]fs.DirEntry, len(infos)) // sorted by name: Ls sorts siblings by path
	for i, fi := range infos {
		out[i] = fi.DirEntry()
	}
	return out, nil
}

// ReadFile returns the named file's content, following symbolic links. A
// directory is ErrIsDir; a file over the sandbox's max download bytes is
// ErrTooLarge.
func (f *FS) ReadFile(name string) (_ []byte, err error) {
	ctx, op := f.s.begin(f.ctx, "FS.ReadFile")
	defer op.end(&err)
	op.path(name)
	p, err := f.abs("read", name)
	if err != nil {
		return nil, err
	}
	b, err := f.s.readAll(ctx, p)
	if err != nil {
		return nil, rename(err, name)
	}
	op.bytes(int64(len(b)))
	return b, nil
}

// Sub returns the file system rooted at dir (a directory of f; it is
// not looked at until used).
func (f *FS) Sub(dir string) (fs.FS, error) {
	p, err := f.abs("sub", dir)
	if err != nil {
		return nil, err
	}
	return &FS{s: f.s, ctx: f.ctx, root: p}, nil
}

// Pages of a file read through FS.Open: a Read fetches at least
// minReadPage bytes (so small reads cost few requests) and at most
// maxReadPage (what an open file holds).
const (
	minReadPage = 256 << 10
	maxReadPage = 4 << 20
)

// file is a file opened through FS: a directory, or a file read in ranges.
type file struct {
	fsys *FS
	name string // as asked for
	path string // absolute
	info named

	// mu guards what follows; it is never held while the helper is asked.
	mu     sync.Mutex
	closed bool
	off    int64  // where Read goes on
	buf    []byte // the file's bytes from bufOff, as last fetched
	bufOff int64
	bufEOF bool // buf ends where the file did
	// A directory's entries, listed on the first ReadDir.
	entries []fs.DirEntry
	listed  bool
}

var (
	_ fs.ReadDirFile = (*file)(nil)
	_ io.Seeker      = (*file)(nil)
	_ io.ReaderAt    = (*file)(nil)
)

func (f *file) Stat() (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	return f.info, nil
}

// Read reads from the current offset, from the page last fetched or a
// new one.
func (f *file) Read(p []byte) (int, error) {
	f.mu.Lock()
	off, err := f.off, f.readable("read")
	f.mu.Unlock()
	if err != nil || len(p) == 0 {
		return 0, err
	}
	b, _, err := f.at(off, len(p))
	if err != nil {
		return 0, err
	}
	if len(b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b)
	f.mu.Lock()
	f.off = off + int64(n)
	f.mu.Unlock()
	return n, nil
}

// ReadAt reads len(p) bytes from off (fewer at the end of the file, with
// io.EOF), from the page last fetched or new ones. Parallel calls are safe.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	n := 0
	for n < len(p) {
		b, eof, err := f.at(off+int64(n), len(p)-n)
		if err != nil {
			return n, err
		}
		k := copy(p[n:], b)
		n += k
		if k == len(b) && eof || len(b) == 0 {
			break
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// at returns the file's bytes from off to the end of a page: the page
// last fetched if it holds off, else a new one of at least want bytes
// (within minReadPage and maxReadPage); eof reports that the page ends
// where the file did. The lock is not held while fetching; pages are
// never modified, only replaced.
func (f *file) at(off int64, want int) (b []byte, eof bool, err error) {
	f.mu.Lock()
	if err := f.readable("read"); err != nil {
		f.mu.Unlock()
		return nil, false, err
	}
	end := f.bufOff + int64(len(f.buf))
	switch {
	case off >= f.bufOff && off < end:
		b, eof = f.buf[off-f.bufOff:], f.bufEOF
		f.mu.Unlock()
		return b, eof, nil
	case f.bufEOF && off >= end:
		f.mu.Unlock()
		return nil, true, nil
	}
	f.mu.Unlock()
	b, eof, err = f.fsys.s.readRange(f.fsys.ctx, f.path, off, min(max(want, minReadPage), maxReadPage))
	if err != nil {
		return nil, false, rename(err, f.name)
	}
	f.mu.Lock()
	if !f.closed {
		f.buf, f.bufOff, f.bufEOF = b, off, eof
	}
	f.mu.Unlock()
	return b, eof, nil
}

// Seek sets the offset of the next Read; io.SeekEnd counts from the size
// the file had when opened.
func (f *file) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readable("seek"); err != nil {
		return 0, err
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.info.Size()
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

// readable checks that the file is open and not a directory.
func (f *file) readable(op string) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case f.info.IsDir():
		return &fs.PathError{Op: op, Path: f.name, Err: ErrIsDir}
	}
	return nil
}

// ReadDir returns the directory's next n entries (all the rest for n <=
// 0), listed in one request on the first call.
func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	f.mu.Lock()
	listed, err := f.listed, f.listable()
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if !listed { // without the lock held
		entries, err := f.fsys.readDir(f.name, f.path)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		if !f.listed {
			f.entries, f.listed = entries, true
		}
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.listable(); err != nil {
		return nil, err
	}
	if n <= 0 {
		rest := f.entries
		f.entries = nil
		if rest == nil {
			rest = []fs.DirEntry{}
		}
		return rest, nil
	}
	if len(f.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(f.entries))
	out := f.entries[:n:n]
	f.entries = f.entries[n:]
	return out, nil
}

// listable checks that the file is an open directory (f.mu held).
func (f *file) listable() error {
	switch {
	case f.closed:
		return &fs.PathError{Op: "readdir", Path: f.name, Err: fs.ErrClosed}
	case !f.info.IsDir():
		return &fs.PathError{Op: "readdir", Path: f.name, Err: ErrNotDir}
	}
	return nil
}

func (f *file) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed, f.buf, f.entries = true, nil, nil
	return nil
}

// readRange reads up to n (> 0) bytes of the regular file p from off in
// one request; eof reports that the file ended before n bytes. The host
// holds n bytes whatever the helper sends (more is a lie).
func (s *Sandbox) readRange(ctx context.Context, p string, off int64, n int) (b []byte, eof bool, err error) {
	if off > math.MaxInt {
		return nil, false, &fs.PathError{Op: "read", Path: p, Err: fs.ErrInvalid}
	}
	buf := &boundedBuffer{b: make([]byte, 0, n), max: int64(n)}
	res, err := s.call(ctx, proto.Request{Op: proto.OpCat, Path: p, Offset: int(off), Limit: n - 1}, callOptions{stdout: buf, shared: true})
	if err != nil {
		return nil, false, err
	}
	if res.Error != nil {
		return nil, false, &fs.PathError{Op: "read", Path: p, Err: res.Error.Err()}
	}
	if res.Offset != off {
		return nil, false, fmt.Errorf("%w: a read from %d answered from %d", errHelperLied, off, res.Offset)
	}
	return buf.b, len(buf.b) < n, nil
}

// readAll reads the whole regular file p, in ranges sized by the file's
// size as the helper sees it, up to the sandbox's max download bytes.
func (s *Sandbox) readAll(ctx context.Context, p string) ([]byte, error) {
	limit := s.opts.maxDownload
	var out []byte
	want := int64(64 << 10)
	for {
		if rest := limit - int64(len(out)) + 1; want > rest {
			want = rest // one byte past the limit says the file is over it
		}
		b, eof, err := s.readRange(ctx, p, int64(len(out)), int(min(want, maxReadPage)))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		if int64(len(out)) > limit {
			return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w: over %d bytes (see WithMaxDownloadBytes)", ErrTooLarge, limit)}
		}
		if eof {
			if out == nil {
				out = []byte{}
			}
			return out, nil
		}
		want = min(2*want, maxReadPage)
	}
}
