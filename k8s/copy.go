package k8s

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"

	"github.com/dockersandbox/sandbox/engine"
	corev1 "k8s.io/api/core/v1"
)

// Exit codes of the helper's untar and tar modes (internal/helper).
const (
	exitNotExist = 3
	exitIsDir    = 4
	exitNoSpace  = 5
)

// maxDiag bounds what is kept of a copy's stderr, and of untar's stdout.
const maxDiag = 4 << 10

// untarDone is the helper's last line of a complete untar.
const untarDone = "untar: done"

// helperArgv returns the pod's helper command line for mode and arg.
func helperArgv(mode, arg string) func(*corev1.Pod) []string {
	return func(p *corev1.Pod) []string {
		h := p.Annotations[annHelper]
		if h == "" {
			return nil
		}
		return []string{h, mode, arg}
	}
}

// CopiesByExec reports that CopyTo and CopyFrom each start an exec (the
// helper's untar and tar modes): the library moves files over its shared
// channel instead (engine.ExecCopier), which saves the exec's start, about
// 60 ms through the API server.
func (e *Engine) CopiesByExec() bool { return true }

// CopyTo extracts the tar archive into dir in the sandbox, through the
// helper's untar mode over an exec (the image needs no tar). The helper
// stays beneath dir (no entry is written outside it) and applies owners
// where the sandbox's user may. A missing dir wraps fs.ErrNotExist; a
// file where the sandbox has a directory, engine.ErrIsDir; a full disk,
// syscall.ENOSPC. ctx bounds the whole copy.
func (e *Engine) CopyTo(ctx context.Context, id, dir string, archive io.Reader) error {
	s, err := e.exec(ctx, id, "", helperArgv("untar", dir))
	if err != nil {
		return err
	}
	defer s.Close()
	var out, diag bytes.Buffer
	outDone, diagDone := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = io.Copy(&limited{&out, maxDiag}, s.Stdout())
		close(outDone)
	}()
	go func() {
		_, _ = io.Copy(&limited{&diag, maxDiag}, s.Stderr())
		close(diagDone)
	}()
	go func() {
		_, _ = io.Copy(s, archive)
		_ = s.CloseWrite()
	}()
	code, err := s.wait(ctx)
	if err != nil {
		return fmt.Errorf("k8s: copy into %s:%s: %w", id, dir, err)
	}
	<-outDone // the stream ended: both readers end too
	<-diagDone
	if err := copyErr(code, diag.String()); err != nil {
		return fmt.Errorf("k8s: copy into %s:%s: %w", id, dir, err)
	}
	if !strings.Contains(out.String(), untarDone) {
		return fmt.Errorf("k8s: copy into %s:%s: the helper did not confirm the copy (%q)", id, dir, strings.TrimSpace(diag.String()))
	}
	return nil
}

// copyErr maps the helper's exit code onto an error.
func copyErr(code int, diag string) error {
	msg := strings.TrimSpace(diag)
	switch code {
	case 0:
		return nil
	case exitNotExist:
		return fmt.Errorf("%w (%s)", fs.ErrNotExist, msg)
	case exitIsDir:
		return fmt.Errorf("%w (%s)", engine.ErrIsDir, msg)
	case exitNoSpace:
		return fmt.Errorf("%w (%s)", syscall.ENOSPC, msg)
	}
	return fmt.Errorf("the helper exited with %d: %s", code, msg)
}

// CopyFrom returns a tar archive of path in the sandbox (its base name
// first, a directory's tree beneath it, symlinks not followed), through
// the helper's tar mode over an exec. A missing path wraps fs.ErrNotExist.
// ctx bounds the start; the caller closes the archive, which ends the
// exec. A read after the archive's end returns the helper's error, if it
// failed half way.
func (e *Engine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	s, err := e.exec(ctx, id, "", helperArgv("tar", path))
	if err != nil {
		return nil, err
	}
	diag := &bytes.Buffer{}
	diagDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(&limited{diag, maxDiag}, s.Stderr())
		close(diagDone)
	}()
	_ = s.CloseWrite()
	br := bufio.NewReaderSize(s.Stdout(), 32<<10)
	peeked := make(chan error, 1)
	go func() {
		_, err := br.Peek(1)
		peeked <- err
	}()
	select {
	case err = <-peeked:
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	if err != nil { // nothing came: the helper failed, or the stream did
		code, werr := s.wait(ctx)
		<-diagDone
		if werr == nil {
			werr = copyErr(code, diag.String())
		}
		if werr == nil {
			werr = err
		}
		s.Close()
		return nil, fmt.Errorf("k8s: copy from %s:%s: %w", id, path, werr)
	}
	return &copyReader{r: br, s: s, diag: diag, diagDone: diagDone}, nil
}

// copyReader is CopyFrom's archive.
type copyReader struct {
	r        io.Reader
	s        *stream
	diag     *bytes.Buffer
	diagDone chan struct{}
}

func (c *copyReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		code, werr := c.s.wait(context.Background())
		<-c.diagDone
		if werr == nil {
			werr = copyErr(code, c.diag.String())
		}
		if werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (c *copyReader) Close() error { return c.s.Close() }

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
