package helper

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dockersandbox/sandbox/internal/tarx"
)

// Modes of the helper that move files for engines without an archive API
// (Kubernetes): the library runs them over an exec.
const (
	// InstallMode copies the helper itself to a path (an init container
	// of the helper image puts it where the sandbox expects it).
	InstallMode = "install"
	// UntarMode extracts the tar archive on stdin into a directory.
	UntarMode = "untar"
	// TarMode writes a tar archive of a path to stdout.
	TarMode = "tar"
)

// Exit codes of Untar and Tar beyond 0 (done) and 1 (another error), so
// that the caller can tell the errors apart without parsing messages.
const (
	ExitNotExist = 3 // the directory or path does not exist
	ExitIsDir    = 4 // a file of the archive where a directory is
	ExitNoSpace  = 5 // the disk is full
)

// archiveExit maps err onto the exit codes above.
func archiveExit(err error) int {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ExitNotExist
	case errors.Is(err, errReplaceDir):
		return ExitIsDir
	case errors.Is(err, syscall.ENOSPC):
		return ExitNoSpace
	}
	return 1
}

// errReplaceDir: an entry of the archive that is not a directory where a
// directory is.
var errReplaceDir = errors.New("cannot replace a directory with a non-directory")

// UntarDone is the line Untar writes to stdout once it read and extracted
// the whole archive. The caller checks for it: some runtimes close an
// exec's stdin when its stdout closes, so a command that ends early, or
// never read everything, is told apart from a finished one.
const UntarDone = "untar: done"

// Install copies the running executable to dest with mode 0755, through a
// temporary file in the same directory renamed into place, and makes the
// directory run beside it (the process table's, mode 0700) and each of
// dirs: owned by owner ("uid:gid"), or, when owner is "", dirs
// world-writable with the sticky bit (mode 1777) for a user not known in
// advance, and run the installer's (root's, PID 1's user for an image
// without a USER): PID 1 serves its process table only from a directory
// that is its own alone (mode 0700). It returns the process's exit code.
func Install(dest, owner string, dirs ...string) int {
	if err := install(dest); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-helper install:", err)
		return 1
	}
	if err := ownDirs(owner, append([]string{filepath.Join(filepath.Dir(dest), "run")}, dirs...)); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-helper install:", err)
		return 1
	}
	return 0
}

// ownDirs makes each of dirs (run first, mode 0700) and gives it to owner.
func ownDirs(owner string, dirs []string) error {
	uid, gid := -1, -1
	if owner != "" {
		if _, err := fmt.Sscanf(owner, "%d:%d", &uid, &gid); err != nil || uid < 0 || gid < 0 {
			return fmt.Errorf("owner %q: want uid:gid", owner)
		}
	}
	for i, d := range dirs {
		mode := fs.FileMode(0o755)
		if i == 0 {
			mode = 0o700
		}
		if uid < 0 && i > 0 {
			mode = 0o777 | fs.ModeSticky
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if uid >= 0 {
			if err := os.Chown(d, uid, gid); err != nil {
				return err
			}
		}
		if err := os.Chmod(d, mode); err != nil {
			return err
		}
	}
	return nil
}

func install(dest string) error {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".install-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}

// Untar extracts the tar archive read from r into the existing directory
// dir, as Docker's archive API does, and returns the exit code (above). Nothing is
// written outside dir: names are checked (tarx.Check: no absolute names,
// no "..", nothing through a symlink of the archive) and every file is
// opened beneath dir with os.Root, which refuses a symlink already in dir
// that leads out. An entry replaces what is at its name, unless both are
// directories. Owners are applied when permitted. The whole input is read,
// then UntarDone is written to w.
func Untar(dir string, r io.Reader, w io.Writer) int {
	err := untar(dir, r)
	_, _ = io.Copy(io.Discard, r) // let the sender finish
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-helper untar:", err)
		return archiveExit(err)
	}
	fmt.Fprintln(w, UntarDone)
	return 0
}

func untar(dir string, r io.Reader) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	checked := tarx.Check(r, tarx.Policy{LinksOut: true, MkdirMode: 0o755})
	// Read checked to its end, whatever happens: its goroutine, which
	// reads r, has then returned, and Untar may read r.
	defer func() { _, _ = io.Copy(io.Discard, checked) }()
	tr := tar.NewReader(checked)
	type dirTime struct {
		name string
		t    time.Time
	}
	var dirs []dirTime // directory times are set last: their content changes them
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := hdr.Name
		if name == "." || name == "./" {
			continue
		}
		name = path.Clean(name)
		mode := fs.FileMode(hdr.Mode).Perm()
		if hdr.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := mkdirReplace(root, name, mode); err != nil {
				return err
			}
			dirs = append(dirs, dirTime{name, hdr.ModTime})
		case tar.TypeReg:
			if err := removeNonDir(root, name); err != nil {
				return err
			}
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			_ = root.Chtimes(name, hdr.ModTime, hdr.ModTime)
		case tar.TypeSymlink:
			if err := removeNonDir(root, name); err != nil {
				return err
			}
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := removeNonDir(root, name); err != nil {
				return err
			}
			if err := root.Link(path.Clean(hdr.Linkname), name); err != nil {
				return err
			}
			continue // the target's owner and mode are the link's
		default:
			return fmt.Errorf("%q: %w", hdr.Name, tarx.ErrUnsafe)
		}
		if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil && !errors.Is(err, syscall.EPERM) {
			return err
		}
		if hdr.Typeflag != tar.TypeSymlink {
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = root.Chtimes(dirs[i].name, dirs[i].t, dirs[i].t)
	}
	return nil
}

// mkdirReplace makes the directory name beneath root, replacing anything
// but a directory there.
func mkdirReplace(root *os.Root, name string, mode fs.FileMode) error {
	fi, err := root.Lstat(name)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		if err := root.Remove(name); err != nil {
			return err
		}
	}
	return root.Mkdir(name, mode)
}

// removeNonDir removes what is at name beneath root, unless nothing is;
// a directory there is an error (as with Docker).
func removeNonDir(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%q: %w", name, errReplaceDir)
	}
	return root.Remove(name)
}

// Tar writes a tar archive of p to w, as Docker's archive API does: its
// first entry is p's base name; a directory's content follows beneath it.
// Symlinks are archived as links, never followed (p itself neither).
// Only directories, regular files and symlinks are archived. It returns
// the exit code.
func Tar(p string, w io.Writer) int {
	if err := tarPath(p, w); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-helper tar:", err)
		return archiveExit(err)
	}
	return 0
}

func tarPath(p string, w io.Writer) error {
	p = filepath.Clean(p)
	if _, err := os.Lstat(p); err != nil {
		return err
	}
	base := filepath.Base(p)
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(p, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
			return nil
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(full); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p, full)
		hdr.Name = filepath.ToSlash(filepath.Join(base, rel))
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(full)
		if err != nil {
			return err
		}
		defer f.Close()
		// A file that grows while read is cut at its size in the header.
		_, err = io.CopyN(tw, f, hdr.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
