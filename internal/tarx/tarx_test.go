package tarx

import (
	"archive/tar"
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteFile(&buf, File{Name: "données ✓.txt", Content: []byte("hi\x00there"), Mode: 0o644, UID: 1000, GID: 1000, ModTime: time.Now()}))
	got, err := ReadFile(bytes.NewReader(buf.Bytes()), 100)
	require.NoError(t, err)
	assert.Equal(t, []byte("hi\x00there"), got)

	_, err = ReadFile(bytes.NewReader(buf.Bytes()), 3)
	assert.ErrorIs(t, err, ErrTooLarge)

	for _, name := range []string{"", ".", "..", "a/b", "/abs", "nul\x00"} {
		assert.Error(t, WriteFile(&bytes.Buffer{}, File{Name: name}), name)
	}
}

func TestHostileArchives(t *testing.T) {
	mk := func(hdrs ...*tar.Header) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range hdrs {
			require.NoError(t, tw.WriteHeader(h))
			if h.Size > 0 {
				_, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
				require.NoError(t, err)
			}
		}
		require.NoError(t, tw.Close())
		return buf.Bytes()
	}
	_, err := ReadFile(bytes.NewReader(mk(&tar.Header{Typeflag: tar.TypeDir, Name: "d/"})), 10)
	assert.ErrorIs(t, err, ErrIsDir)
	_, err = ReadFile(bytes.NewReader(mk(&tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/shadow"})), 10)
	assert.ErrorIs(t, err, ErrNotRegular)
	// Names are never used: a "../" or absolute name yields content, nothing else.
	got, err := ReadFile(bytes.NewReader(mk(&tar.Header{Typeflag: tar.TypeReg, Name: "../../etc/passwd", Size: 3}, &tar.Header{Typeflag: tar.TypeReg, Name: "/abs", Size: 2})), 10)
	require.NoError(t, err)
	assert.Equal(t, "xxx", string(got))
	// A header claiming 10 GiB is refused before any allocation.
	huge := mk(&tar.Header{Typeflag: tar.TypeReg, Name: "sparse", Size: 0})
	var h bytes.Buffer
	tw := tar.NewWriter(&h)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: 10 << 30}))
	_, err = ReadFile(bytes.NewReader(h.Bytes()), 1<<20)
	assert.ErrorIs(t, err, ErrTooLarge)
	_ = huge
	// Truncated or garbage input is an error.
	_, err = ReadFile(bytes.NewReader([]byte("not a tar")), 10)
	assert.Error(t, err)
}

func FuzzReadFile(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteFile(&buf, File{Name: "a", Content: []byte("hello")})
	f.Add(buf.Bytes(), int64(10))
	f.Add([]byte("garbage"), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, max int64) {
		if max < 0 || max > 1<<20 {
			max = 1 << 20
		}
		got, err := ReadFile(bytes.NewReader(data), max)
		if err == nil && int64(len(got)) > max {
			t.Fatalf("returned %d bytes, limit %d", len(got), max)
		}
	})
}

func FuzzWriteRead(f *testing.F) {
	f.Add("name.txt", []byte("content"))
	f.Fuzz(func(t *testing.T, name string, content []byte) {
		var buf bytes.Buffer
		if err := WriteFile(&buf, File{Name: name, Content: content, Mode: 0o644}); err != nil {
			return
		}
		got, err := ReadFile(&buf, int64(len(content)))
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("round trip of %q: %v", name, err)
		}
	})
}

// ReadFileOrLink gives a symbolic link's target, ReadFile's answer otherwise.
func TestReadFileOrLink(t *testing.T) {
	content, link, err := ReadFileOrLink(bytes.NewReader(tarOf(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "../certs/ca.pem"})), 10)
	require.NoError(t, err)
	assert.Equal(t, "../certs/ca.pem", link)
	assert.Nil(t, content)
	content, link, err = ReadFileOrLink(bytes.NewReader(tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "f", Size: 4})), 10)
	require.NoError(t, err)
	assert.Equal(t, "", link)
	assert.Len(t, content, 4)
	_, _, err = ReadFileOrLink(bytes.NewReader(tarOf(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "l"})), 10)
	assert.ErrorIs(t, err, ErrNotRegular, "a link without a target")
	_, _, err = ReadFileOrLink(bytes.NewReader(tarOf(t, &tar.Header{Typeflag: tar.TypeReg, Name: "f", Size: 11})), 10)
	assert.ErrorIs(t, err, ErrTooLarge)
	_, _, err = ReadFileOrLink(bytes.NewReader(tarOf(t, &tar.Header{Typeflag: tar.TypeDir, Name: "d/"})), 10)
	assert.ErrorIs(t, err, ErrIsDir)
}
