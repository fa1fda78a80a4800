package sandbox

import (
	"archive/tar"
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/dockersandbox/sandbox/internal/iox"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/tarx"
)

// Persist writes a tar archive of the working directory, or of the given
// paths (relative to the working directory, or absolute inside it), to w,
// streaming: the host holds a few buffers whatever the size. Entry names
// are relative to the working directory, so that Hydrate restores them
// into another sandbox's; modes, owners, mtimes and symlinks (kept as
// they are, never followed) are recorded. A path outside the working
// directory, or a file reached through a symlink, is ErrInvalidPath. Entries the
// container sends with unsafe names are refused (ErrUnsafeArchive):
// Persist never writes an archive that would escape its target.
//
// The archive is read through Docker's archive API while the sandbox
// runs: a file changed meanwhile may be recorded in either state.
func (s *Sandbox) Persist(ctx context.Context, w io.Writer, paths ...string) (err error) {
	ctx, op := s.begin(ctx, "Persist")
	counted := &iox.CountWriter{W: w}
	w = counted
	defer func() { op.bytes(counted.N); op.end(&err) }()
	if s.closed.Load() {
		return ErrClosed
	}
	if len(paths) == 0 {
		paths = []string{s.opts.workingDir}
	}
	abs := make([]string, len(paths))
	for i, raw := range paths {
		p, err := s.abs("persist", raw)
		if err != nil {
			return err
		}
		if p != s.opts.workingDir && !strings.HasPrefix(p, s.opts.workingDir+"/") || !archiveSafe(p) {
			return &fs.PathError{Op: "persist", Path: raw, Err: fmt.Errorf("%w: not inside the working directory %s", ErrInvalidPath, s.opts.workingDir)}
		}
		abs[i] = p
	}
	res, err := s.call(ctx, proto.Request{Op: proto.OpStat, Paths: abs}, callOptions{shared: true})
	if err != nil {
		return err
	}
	if len(res.Stats) != len(abs) {
		return fmt.Errorf("%w: persist preflight answered %d of %d paths", ErrHelper, len(res.Stats), len(abs))
	}
	for i, st := range res.Stats {
		if st.Error != nil && errors.Is(st.Error.Err(), ErrIsDir) {
			continue // a directory: what Persist is for
		}
		if st.Error != nil {
			return &fs.PathError{Op: "persist", Path: abs[i], Err: st.Error.Err()}
		}
		if st.Resolved != abs[i] {
			return &fs.PathError{Op: "persist", Path: abs[i], Err: fmt.Errorf("%w: reached through a symlink (to %q)", ErrInvalidPath, st.Resolved)}
		}
	}
	// One buffer before the caller's writer: the archive's many small
	// writes (a header per entry) become few.
	bw := bufio.NewWriterSize(markWriter{w}, persistBuffer)
	tw := tar.NewWriter(bw)
	for _, p := range abs {
		if err := s.persistOne(ctx, tw, p); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return cmp.Or(callerErr(err), err)
	}
	if err := bw.Flush(); err != nil {
		return cmp.Or(callerErr(err), err)
	}
	return nil
}

// persistBuffer is the size of Persist's write buffer.
const persistBuffer = 256 << 10

// callerErr returns the caller's writer's error that err holds (a
// markWriter marked it), as it was; nil if err holds none.
func callerErr(err error) error {
	var we writeErr
	if errors.As(err, &we) {
		return we.error
	}
	return nil
}

// persistOne appends the tree at p to tw, its names relative to the
// working directory.
func (s *Sandbox) persistOne(ctx context.Context, tw *tar.Writer, p string) error {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, s.opts.workingDir), "/")
	wctx, prog, stop := watchProgress(ctx)
	defer stop()
	rc, err := s.eng.CopyFrom(wctx, s.id, p)
	if err != nil {
		err = stalled(ctx, wctx, err)
		if errors.Is(err, fs.ErrNotExist) {
			return &fs.PathError{Op: "persist", Path: p, Err: fmt.Errorf("%w: %v", fs.ErrNotExist, err)}
		}
		return s.dockerErr("persist", err)
	}
	defer rc.Close()
	// The archive names the tree after its base name ("workspace/..."),
	// or "." for "/"; whatever else the container makes it say is refused.
	base := path.Base(p)
	// The entries go straight from the engine's archive, checked and
	// renamed, into tw: no second archive in between.
	err = tarx.CheckTo(tw, prog.reader(rc), tarx.Policy{LinksOut: true, MkdirMode: 0o755,
		Rename: func(name string) (string, bool, error) {
			name = strings.TrimPrefix(strings.TrimPrefix(name, "./"), "/")
			switch {
			case name == base || name == base+"/":
				if rel == "" {
					return "", false, nil // the working directory itself
				}
				return rel, true, nil
			case strings.HasPrefix(name, base+"/"):
				return path.Join(rel, name[len(base)+1:]), true, nil
			}
			return "", false, fmt.Errorf("%w: not under %q", ErrUnsafeArchive, base)
		}})
	if err == nil {
		return nil
	}
	if we := callerErr(err); we != nil {
		return we // the caller's writer failed
	}
	return s.persistErr(ctx, wctx, err)
}

// persistErr explains a failed read of the archive.
func (s *Sandbox) persistErr(ctx, wctx context.Context, err error) error {
	if errors.Is(err, tarx.ErrUnsafe) || errors.Is(err, tarx.ErrTooLarge) {
		return fmt.Errorf("sandbox %s: persist: %w", s.ID(), err)
	}
	return s.dockerErr("persist", stalled(ctx, wctx, err))
}

// markWriter marks the failures of Persist's writer (writeErr), to tell
// them from the archive's.
type markWriter struct{ w io.Writer }

func (m markWriter) Write(p []byte) (int, error) {
	n, err := m.w.Write(p)
	if err != nil {
		err = writeErr{err}
	}
	return n, err
}

type writeErr struct{ error }

func (e writeErr) Unwrap() error { return e.error }

// Bounds of Hydrate (see HydrateMaxBytes).
const (
	// DefaultMaxHydrateBytes caps the total size of the files of one
	// Hydrate archive.
	DefaultMaxHydrateBytes = 4 << 30
	// MaxHydrateEntries caps the number of entries of one Hydrate archive.
	MaxHydrateEntries = 1 << 20
)

// A HydrateOption configures Hydrate.
type HydrateOption func(*hydrateConfig) error

type hydrateConfig struct {
	maxBytes int64
}

// HydrateMaxBytes caps the total size of the archive's files (default
// DefaultMaxHydrateBytes); a larger archive is ErrTooLarge. Sizes count
// in full, a sparse file's too.
func HydrateMaxBytes(n int64) HydrateOption {
	return func(c *hydrateConfig) error {
		if n <= 0 {
			return fmt.Errorf("max hydrate bytes %d must be positive", n)
		}
		c.maxBytes = n
		return nil
	}
}

// Hydrate restores a tar archive (Persist's, or any other) into the
// sandbox's working directory, through Docker's archive API, with the
// entries' modes (set-ID bits dropped), mtimes and symlinks; the files
// belong to the sandbox's user. The archive may come from anywhere:
// another sandbox, engine or machine.
//
// Every entry is checked on the host before the engine sees it, and the
// first refused one ends the call with ErrUnsafeArchive (naming the
// entry) or ErrTooLarge: an absolute name or one with "..", a symlink
// whose target leaves the working directory (absolute, or climbing above
// it), a hard link to anything but an earlier file of the archive, an
// entry under a symlink or a file of the archive, a device, FIFO or
// sparse file, more than the maximum size or MaxHydrateEntries entries.
// Entries before the refused one may have been written, all inside the
// working directory. Parents that the archive does not declare are made as
// directories (mode 0755), which an existing symlink in the sandbox is
// not followed through: the engine refuses to put a directory in its
// place. A working directory that is itself a symlink is refused
// (ErrInvalidPath). The engine extracts inside the container's root
// filesystem, so nothing can reach the host; a process in the sandbox
// that swaps a directory for a symlink while Hydrate runs can redirect
// entries elsewhere in its own sandbox, as it could write there itself.
func (s *Sandbox) Hydrate(ctx context.Context, r io.Reader, opts ...HydrateOption) (err error) {
	ctx, op := s.begin(ctx, "Hydrate")
	counted := &iox.CountReader{R: r}
	r = counted
	defer func() { op.bytes(counted.N); op.end(&err) }()
	c := hydrateConfig{maxBytes: DefaultMaxHydrateBytes}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&c); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	if s.closed.Load() {
		return ErrClosed
	}
	dir := s.opts.workingDir
	res, err := s.call(ctx, proto.Request{Op: proto.OpPrepare, Paths: []string{dir + "/.hydrate"}}, callOptions{shared: true})
	if err != nil {
		return err
	}
	if len(res.Stats) != 1 {
		return fmt.Errorf("%w: hydrate preflight answered %d of 1 paths", ErrHelper, len(res.Stats))
	}
	if st := res.Stats[0]; st.Error != nil && !errors.Is(st.Error.Err(), fs.ErrNotExist) {
		return &fs.PathError{Op: "hydrate", Path: dir, Err: st.Error.Err()}
	} else if st.Error == nil && !strings.HasPrefix(st.Resolved, dir+"/") {
		return &fs.PathError{Op: "hydrate", Path: dir, Err: fmt.Errorf("%w: the working directory is reached through a symlink (to %q)", ErrInvalidPath, st.Resolved)}
	}
	owner := [2]int{res.UID, res.GID}
	checked := tarx.Check(r, tarx.Policy{MaxBytes: c.maxBytes, MaxEntries: MaxHydrateEntries, Owner: &owner, MkdirMode: 0o755})
	defer checked.Close()
	cr := &errReader{r: checked}
	wctx, prog, stop := watchProgress(ctx)
	defer stop()
	err = s.eng.CopyTo(wctx, s.id, dir, prog.reader(cr))
	if cr.err != nil && cr.err != io.EOF {
		// The check's refusal (or the caller's reader's failure) comes
		// first: the engine only saw the stream end early.
		if errors.Is(cr.err, tarx.ErrTooLarge) {
			return fmt.Errorf("sandbox %s: hydrate: %w: %v", s.ID(), ErrTooLarge, cr.err)
		}
		return fmt.Errorf("sandbox %s: hydrate: %w", s.ID(), cr.err)
	}
	if err != nil {
		err = stalled(ctx, wctx, err)
		if errors.Is(err, ErrNoSpace) {
			return fmt.Errorf("sandbox %s: hydrate: %w: %v", s.ID(), ErrNoSpace, err)
		}
		return s.dockerErr("hydrate", err)
	}
	return nil
}

// errReader remembers the error its reader returned.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
