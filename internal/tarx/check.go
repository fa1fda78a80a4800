package tarx

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// ErrUnsafe: an archive entry would write outside the target directory,
// write through a link, or create something other than a file, directory
// or link.
var ErrUnsafe = errors.New("unsafe archive entry")

// Policy says what Check lets through and how it rewrites entries.
type Policy struct {
	// MaxBytes caps the total size of the regular files (their logical
	// size: a sparse file counts in full); more is ErrTooLarge.
	MaxBytes int64
	// MaxEntries caps the number of entries; more is ErrTooLarge.
	MaxEntries int
	// LinksOut lets symlinks point anywhere (they are data, never
	// followed); otherwise a symlink must stay inside the target.
	LinksOut bool
	// Rename, if set, maps each entry's name (as found in the archive) to
	// its name in the output, before the checks; ok false drops the
	// entry; an error ends the stream.
	Rename func(name string) (string, bool, error)
	// Owner, if set, gives every entry this owner (uid, gid).
	Owner *[2]int
	// MkdirMode is the mode of the directories Check adds for parents the
	// archive does not declare before their content.
	MkdirMode int64
}

// An EntryError is a refused entry.
type EntryError struct {
	Name string
	Err  error
}

func (e *EntryError) Error() string { return fmt.Sprintf("archive entry %q: %v", e.Name, e.Err) }
func (e *EntryError) Unwrap() error { return e.Err }

// Check returns a tar archive re-encoded from the archive r as it is read:
// every entry is checked before any of it is passed on, so what the
// consumer gets up to a refused entry is safe, and then the read fails
// with the refusal (an *EntryError wrapping ErrUnsafe or ErrTooLarge).
// Names are relative to the target, without "..", and never go through a
// symlink or a file of the archive; parents the archive does not declare
// are added as directories (they might otherwise be symlinks already in
// the target: a consumer that extracts a directory entry replaces a
// symlink in its place). Hard links must point to an earlier regular file
// of the archive. Devices, FIFOs and sparse entries are refused; set-ID
// bits, extended attributes and owner names are dropped. Close the result
// to stop reading r.
func Check(r io.Reader, p Policy) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := CheckTo(tw, r, p)
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// kinds of the names an archive declared.
const (
	kindDir = iota + 1
	kindFile
	kindLink // symlink
	kindOther
)

// CheckTo is Check without the pipe, for a consumer that writes an
// archive itself: it writes the checked entries of r to tw as it reads
// them, and returns the first refusal, or the first error of r or of tw
// (wrapped). It does not close tw, so that the entries of more archives
// can follow.
func CheckTo(tw *tar.Writer, r io.Reader, p Policy) error {
	tr := tar.NewReader(r)
	seen := map[string]int{}
	var total int64
	entries := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tarx: read archive: %w", err)
		}
		entries++
		if p.MaxEntries > 0 && entries > p.MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrTooLarge, p.MaxEntries)
		}
		raw := hdr.Name
		name := raw
		if p.Rename != nil {
			var ok bool
			name, ok, err = p.Rename(raw)
			if err != nil {
				return &EntryError{raw, err}
			}
			if !ok {
				continue
			}
		}
		name, err = cleanName(name)
		if err != nil {
			return &EntryError{raw, err}
		}
		if name == "." {
			continue // the target itself: its metadata is the target's
		}
		out := &tar.Header{Name: name, Mode: hdr.Mode & 0o1777, ModTime: hdr.ModTime, Uid: hdr.Uid, Gid: hdr.Gid, Format: tar.FormatPAX}
		if p.Owner != nil {
			out.Uid, out.Gid = p.Owner[0], p.Owner[1]
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse") {
				return &EntryError{raw, fmt.Errorf("%w: a sparse file", ErrUnsafe)}
			}
		}
		kind := 0
		switch hdr.Typeflag {
		case tar.TypeReg:
			out.Typeflag, out.Size, kind = tar.TypeReg, hdr.Size, kindFile
			if hdr.Size < 0 || p.MaxBytes > 0 && hdr.Size > p.MaxBytes-total {
				return &EntryError{raw, fmt.Errorf("%w: %d bytes, more than the %d bytes allowed in all", ErrTooLarge, hdr.Size, p.MaxBytes)}
			}
			total += hdr.Size
		case tar.TypeDir:
			out.Typeflag, kind = tar.TypeDir, kindDir
		case tar.TypeSymlink:
			if err := checkSymlink(name, hdr.Linkname, p.LinksOut); err != nil {
				return &EntryError{raw, err}
			}
			out.Typeflag, out.Linkname, kind = tar.TypeSymlink, hdr.Linkname, kindLink
		case tar.TypeLink:
			target, err := cleanName(hdr.Linkname)
			if p.Rename != nil && err == nil {
				var ok bool
				target, ok, err = p.Rename(hdr.Linkname)
				if err == nil && !ok {
					err = fmt.Errorf("%w: a hard link to %q, which is not in the archive", ErrUnsafe, hdr.Linkname)
				}
				if err == nil {
					target, err = cleanName(target)
				}
			}
			if err != nil {
				return &EntryError{raw, err}
			}
			if seen[target] != kindFile {
				return &EntryError{raw, fmt.Errorf("%w: a hard link to %q, which is not an earlier file of the archive", ErrUnsafe, hdr.Linkname)}
			}
			out.Typeflag, out.Linkname, kind = tar.TypeLink, target, kindFile
		case tar.TypeChar, tar.TypeBlock:
			return &EntryError{raw, fmt.Errorf("%w: a device file", ErrUnsafe)}
		case tar.TypeFifo:
			return &EntryError{raw, fmt.Errorf("%w: a FIFO", ErrUnsafe)}
		case tar.TypeGNUSparse:
			return &EntryError{raw, fmt.Errorf("%w: a sparse file", ErrUnsafe)}
		default:
			return &EntryError{raw, fmt.Errorf("%w: entry type %q", ErrUnsafe, hdr.Typeflag)}
		}
		// Every parent must be a directory of the archive (added if it
		// never came), never a link or a file of it.
		var missing []string
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			switch seen[dir] {
			case kindDir:
			case 0:
				missing = append(missing, dir)
				continue
			default:
				return &EntryError{raw, fmt.Errorf("%w: %q, on its path, is not a directory of the archive (a link or a file)", ErrUnsafe, dir)}
			}
			break
		}
		for i := len(missing) - 1; i >= 0; i-- {
			d := &tar.Header{Typeflag: tar.TypeDir, Name: missing[i] + "/", Mode: p.MkdirMode, ModTime: time.Now(), Format: tar.FormatPAX}
			if p.Owner != nil {
				d.Uid, d.Gid = p.Owner[0], p.Owner[1]
			}
			if err := tw.WriteHeader(d); err != nil {
				return err
			}
			seen[missing[i]] = kindDir
		}
		if kind == kindDir {
			out.Name += "/"
		}
		if seen[name] == kindDir && kind != kindDir {
			// A file where the archive made a directory: its content,
			// checked against the directory, would then be under a file.
			return &EntryError{raw, fmt.Errorf("%w: replaces a directory of the archive", ErrUnsafe)}
		}
		seen[name] = kind
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if out.Typeflag == tar.TypeReg {
			if _, err := io.CopyN(tw, tr, out.Size); err != nil {
				return fmt.Errorf("tarx: read archive: %w", err)
			}
		}
	}
}

// cleanName returns the relative, clean form of an entry name, or an
// error if it is absolute, holds "..", a NUL byte, or is empty.
func cleanName(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: empty name or a NUL byte", ErrUnsafe)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%w: an absolute name", ErrUnsafe)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: a \"..\" in the name", ErrUnsafe)
		}
	}
	return path.Clean(name), nil
}

// checkSymlink refuses a symlink at name whose target leaves the target
// directory: an absolute target, more leading ".." than the link is deep,
// or a ".." after another component (which, after a link, could climb
// anywhere). With linksOut, only NUL bytes and empty targets are refused.
func checkSymlink(name, target string, linksOut bool) error {
	if target == "" || strings.ContainsRune(target, 0) {
		return fmt.Errorf("%w: a symlink with an empty target or a NUL byte", ErrUnsafe)
	}
	if linksOut {
		return nil
	}
	if strings.HasPrefix(target, "/") {
		return fmt.Errorf("%w: a symlink to the absolute path %q", ErrUnsafe, target)
	}
	depth := strings.Count(name, "/") // of the link's directory
	up, down := 0, false
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
		case "..":
			if down {
				return fmt.Errorf("%w: a symlink to %q (\"..\" after a name)", ErrUnsafe, target)
			}
			up++
		default:
			down = true
		}
	}
	if up > depth {
		return fmt.Errorf("%w: a symlink to %q, outside the target", ErrUnsafe, target)
	}
	return nil
}
