// Package tarx reads and writes the one-file tar archives that Docker's
// archive API exchanges, with bounds: nothing larger than asked is
// allocated, and nothing is ever written to the host's filesystem.
package tarx

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors of ReadFile.
var (
	ErrIsDir      = errors.New("archive holds a directory")
	ErrNotRegular = errors.New("archive holds no regular file")
	ErrTooLarge   = errors.New("archive entry too large")
)

// File is one regular file to archive.
type File struct {
	Name     string // base name, no slashes
	Content  []byte
	Mode     int64
	UID, GID int
	ModTime  time.Time
}

// WriteFile writes a tar archive holding f to w.
func WriteFile(w io.Writer, f File) error {
	r, err := NewReader(f)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	return err
}

// NewReader returns a tar archive holding f, as a reader over f.Content
// itself: the content is not copied, however large.
func NewReader(f File) (io.Reader, error) {
	if f.Name == "" || f.Name == "." || f.Name == ".." || containsSlash(f.Name) {
		return nil, fmt.Errorf("tarx: bad file name %q", f.Name)
	}
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: f.Name, Size: int64(len(f.Content)), Mode: f.Mode,
		Uid: f.UID, Gid: f.GID, ModTime: f.ModTime, Format: tar.FormatPAX,
	})
	if err != nil {
		return nil, err
	}
	// The content is padded to a 512-byte block; two zero blocks end the archive.
	pad := (blockSize - len(f.Content)%blockSize) % blockSize
	return io.MultiReader(&hdr, bytes.NewReader(f.Content), bytes.NewReader(make([]byte, pad+2*blockSize))), nil
}

const blockSize = 512

// ReadFile returns the content of the first entry of the archive r, which
// must be a regular file of at most max bytes. Other entries are ignored,
// whatever their names.
func ReadFile(r io.Reader, max int64) ([]byte, error) {
	content, _, err := readFirst(r, max, false)
	return content, err
}

// ReadFileOrLink is ReadFile, except that a first entry that is a symbolic
// link gives its target (never "") and no content.
func ReadFileOrLink(r io.Reader, max int64) (content []byte, link string, err error) {
	return readFirst(r, max, true)
}

func readFirst(r io.Reader, max int64, links bool) ([]byte, string, error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return nil, "", fmt.Errorf("tarx: read archive: %w", err)
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeSymlink:
		if links && hdr.Linkname != "" {
			return nil, hdr.Linkname, nil
		}
		return nil, "", ErrNotRegular
	case tar.TypeDir:
		return nil, "", ErrIsDir
	default:
		return nil, "", ErrNotRegular
	}
	if hdr.Size < 0 || hdr.Size > max {
		return nil, "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, hdr.Size, max)
	}
	buf := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, buf); err != nil {
		return nil, "", fmt.Errorf("tarx: read archive: %w", err)
	}
	return buf, "", nil
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == 0 {
			return true
		}
	}
	return false
}
