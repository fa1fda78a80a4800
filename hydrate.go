package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/dockersandbox/sandbox/internal/tarx"
)

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
func (s *DockerSandbox) Hydrate(ctx context.Context, r io.Reader, opts ...HydrateOption) error {
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
