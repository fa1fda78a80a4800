package integration

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestPersistHydrate: a tree persisted from one sandbox and hydrated into
// another (the other test image) comes back byte for byte, with modes,
// symlinks and mtimes.
func TestPersistHydrate(t *testing.T) {
	t.Parallel()
	for i, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			ctx := sandboxtest.Context(t)
			src := newSandbox(t, image)
			dst := newSandbox(t, images[(i+1)%len(images)])
			big := randomBytes(t, 2<<20)
			res, err := src.UploadFiles(ctx, []sandbox.FileUpload{{Path: "d/big.bin", Content: big}})
			require.NoError(t, err)
			require.NoError(t, res[0].Err)
			mustWrite(t, src, "d/e/small.txt", "small\n")
			mustSh(t, src, "chmod 0700 d/e && chmod 0751 d/big.bin && ln -s e/small.txt d/link && touch -d '2001-02-03 04:05:06' d/e/small.txt")

			var buf bytes.Buffer
			require.NoError(t, src.Persist(ctx, &buf))
			require.NoError(t, dst.Hydrate(ctx, bytes.NewReader(buf.Bytes())))
			require.True(t, bytes.Equal(big, download(t, dst, "d/big.bin")))
			require.Equal(t, "small\n", string(download(t, dst, "d/e/small.txt")))
			require.Equal(t, "751 700", mustSh(t, dst, "stat -c %a d/big.bin d/e | tr '\\n' ' ' | sed 's/ $//'"))
			require.Equal(t, "e/small.txt", mustSh(t, dst, "readlink d/link"))
			require.Equal(t, mustSh(t, src, "stat -c %Y d/e/small.txt"), mustSh(t, dst, "stat -c %Y d/e/small.txt"))
			// The files belong to the target's user, who can change them.
			mustWrite(t, dst, "d/e/small.txt", "changed")

			// Given paths only, names relative to the working directory.
			buf.Reset()
			require.NoError(t, src.Persist(ctx, &buf, "d/e"))
			names := tarNames(t, buf.Bytes())
			require.Equal(t, []string{"d/", "d/e/", "d/e/small.txt"}, names) // the parent is declared
			require.ErrorIs(t, src.Persist(ctx, &buf, "/etc"), sandbox.ErrInvalidPath)

			// The caller's writer failing, at once or midway: its error,
			// as it was, and nothing more is written.
			for _, after := range []int{0, 1 << 20} {
				w := &failingWriter{after: after}
				err := src.Persist(ctx, w)
				require.ErrorIs(t, err, errWriterFull, "fails after %d bytes", after)
				require.Equal(t, errWriterFull, err, "the writer's error, not wrapped")
				require.LessOrEqual(t, w.n, after, "nothing written past the failure")
			}
		})
	}
}

var errWriterFull = errors.New("the writer is full")

// failingWriter takes after bytes, then fails every write.
type failingWriter struct{ after, n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	room := w.after - w.n
	if len(p) <= room {
		w.n += len(p)
		return len(p), nil
	}
	w.n += max(room, 0)
	return max(room, 0), errWriterFull
}

func tarNames(t *testing.T, b []byte) []string {
	tr := tar.NewReader(bytes.NewReader(b))
	var names []string
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name)
	}
	return names
}

type entry struct {
	hdr  tar.Header
	body string
}

func archive(t *testing.T, entries ...entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		h.ModTime = time.Now()
		require.NoError(t, tw.WriteHeader(&h))
		if e.body != "" {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func file(name, body string) entry { return entry{tar.Header{Typeflag: tar.TypeReg, Name: name}, body} }
func dir(name string) entry {
	return entry{tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755}, ""}
}
func symlink(name, target string) entry {
	return entry{tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target}, ""}
}
func hardlink(name, target string) entry {
	return entry{tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}, ""}
}

// TestHydrateHostile: hostile archives are refused with ErrUnsafeArchive
// or ErrTooLarge, and nothing is written outside the working directory
// (the canary files outside stay as they were, no new file appears there).
func TestHydrateHostile(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t, testenv.BusyboxImage)
	ctx := sandboxtest.Context(t)
	mustSh(t, sb, "mkdir -p /tmp/out && echo canary > /tmp/out/canary")
	// /tmp/out and what is in it (modes, sizes, times), the names in /tmp,
	// and the canary: a write outside shows, and a failure shows what.
	// (Not /tmp's own time: it changed once under CI's load, the names in
	// it not; what touched it was not seen.)
	outside := func() string {
		return mustSh(t, sb, "stat -c '%n %a %s %Y' /tmp/out /tmp/out/*; ls -A /tmp; cat /tmp/out/canary")
	}
	before := outside()
	cases := []struct {
		name    string
		archive []byte
		opts    []sandbox.HydrateOption
		want    error
	}{
		{"dotdot", archive(t, file("../../tmp/out/x", "pwned")), nil, sandbox.ErrUnsafeArchive},
		{"absolute", archive(t, file("/tmp/out/x", "pwned")), nil, sandbox.ErrUnsafeArchive},
		{"symlink out then write through it", archive(t, symlink("l", "/tmp/out"), file("l/x", "pwned")), nil, sandbox.ErrUnsafeArchive},
		{"relative symlink out", archive(t, symlink("l", "../../tmp/out"), file("l/x", "pwned")), nil, sandbox.ErrUnsafeArchive},
		{"symlink to a link then up", archive(t, symlink("a", "."), symlink("b", "a/.."), file("b/x", "pwned")), nil, sandbox.ErrUnsafeArchive},
		{"write through an inside symlink", archive(t, dir("d/"), symlink("l", "d"), file("l/x", "x")), nil, sandbox.ErrUnsafeArchive},
		{"hardlink out", archive(t, hardlink("h", "/tmp/out/canary")), nil, sandbox.ErrUnsafeArchive},
		{"hardlink to a name not in the archive", archive(t, hardlink("h", "etc/passwd")), nil, sandbox.ErrUnsafeArchive},
		{"char device", archive(t, entry{tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}, ""}), nil, sandbox.ErrUnsafeArchive},
		{"block device", archive(t, entry{tar.Header{Typeflag: tar.TypeBlock, Name: "sda", Devmajor: 8}, ""}), nil, sandbox.ErrUnsafeArchive},
		{"fifo", archive(t, entry{tar.Header{Typeflag: tar.TypeFifo, Name: "p"}, ""}), nil, sandbox.ErrUnsafeArchive},
		{"over the size limit", archive(t, file("big", strings.Repeat("x", 2048))), []sandbox.HydrateOption{sandbox.HydrateMaxBytes(1024)}, sandbox.ErrTooLarge},
		{"huge sparse file", sparseArchive(t), nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := sb.Hydrate(ctx, bytes.NewReader(c.archive), c.opts...)
			if c.want == nil {
				require.Error(t, err)
				require.True(t, errorsIsAny(err, sandbox.ErrUnsafeArchive, sandbox.ErrTooLarge), "%v", err)
			} else {
				require.ErrorIs(t, err, c.want)
			}
			require.Equal(t, before, outside(), "something changed outside the working directory")
		})
	}
	require.Equal(t, "no", mustSh(t, sb, "test -e /tmp/out/x && echo yes || echo no"))
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// sparseArchive is a GNU sparse entry of 1 TiB logical size.
func sparseArchive(t *testing.T) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "sparse", Size: 1 << 40, Mode: 0o644,
		Format: tar.FormatPAX, PAXRecords: map[string]string{"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "sparse", "GNU.sparse.realsize": "1099511627776"}}))
	return buf.Bytes() // truncated on purpose: the check refuses the header
}
