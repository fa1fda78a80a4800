package tarx

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"
)

func tarOf(t *testing.T, hdrs ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(make([]byte, h.Size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func names(t *testing.T, r io.Reader) ([]string, error) {
	tr := tar.NewReader(r)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, h.Name)
	}
}

func TestCheck(t *testing.T) {
	reg := func(name string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 3, Mode: 0o4755}
	}
	sym := func(name, to string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: to}
	}
	cases := []struct {
		name string
		in   []*tar.Header
		want error
	}{
		{"plain", []*tar.Header{{Typeflag: tar.TypeDir, Name: "d/"}, reg("d/f"), sym("d/l", "f"), sym("d/up", "../x")}, nil},
		{"missing parents added", []*tar.Header{reg("a/b/f")}, nil},
		{"dotdot", []*tar.Header{reg("a/../../f")}, ErrUnsafe},
		{"absolute", []*tar.Header{reg("/etc/passwd")}, ErrUnsafe},
		{"symlink absolute", []*tar.Header{sym("l", "/etc")}, ErrUnsafe},
		{"symlink climbs out", []*tar.Header{sym("d/l", "../../x")}, ErrUnsafe},
		{"dotdot after a name", []*tar.Header{sym("a", "."), sym("b", "a/..")}, ErrUnsafe},
		{"through a symlink", []*tar.Header{sym("l", "d"), reg("l/f")}, ErrUnsafe},
		{"under a file", []*tar.Header{reg("f"), reg("f/g")}, ErrUnsafe},
		{"hardlink to nothing", []*tar.Header{{Typeflag: tar.TypeLink, Name: "h", Linkname: "etc/shadow"}}, ErrUnsafe},
		{"hardlink to a symlink", []*tar.Header{sym("l", "x"), {Typeflag: tar.TypeLink, Name: "h", Linkname: "l"}}, ErrUnsafe},
		{"device", []*tar.Header{{Typeflag: tar.TypeChar, Name: "c"}}, ErrUnsafe},
		{"too large", []*tar.Header{reg("a"), reg("b"), reg("c"), reg("d")}, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(bytes.NewReader(tarOf(t, c.in...)), Policy{MaxBytes: 10, MkdirMode: 0o755})
			defer r.Close()
			got, err := names(t, r)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.name == "missing parents added" && len(got) != 3 {
					t.Fatalf("got %q, want a/ a/b/ a/b/f", got)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v (entries %q), want %v", err, got, c.want)
			}
		})
	}
}

func TestCheckDropsSetID(t *testing.T) {
	r := Check(bytes.NewReader(tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "f", Size: 1, Mode: 0o6755})), Policy{})
	h, err := tar.NewReader(r).Next()
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != 0o755 {
		t.Fatalf("mode %o, want 755", h.Mode)
	}
}
