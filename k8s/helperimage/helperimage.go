// Package helperimage builds the helper image: a tiny OCI image (amd64 and
// arm64 in one index) holding only the sandbox helper at /sandbox-helper.
// A pod's init container runs it as `/sandbox-helper install DEST ...` to
// copy the helper into an emptyDir that the sandbox's own container mounts,
// so any image works, shells or not. The image is built from the helper
// binaries embedded in the library, so its tag (Tag) follows them.
package helperimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/dockersandbox/sandbox/internal/proto"
)

// Repository is the image's default repository name.
const Repository = "dockersandbox/helper"

// BinaryPath is where the helper is in the image.
const BinaryPath = "/sandbox-helper"

// Archs are the image's platforms (linux).
var Archs = []string{"amd64", "arm64"}

// Tag returns the image's tag: the helper protocol's version and the
// first 12 hex digits of the SHA-256 of the embedded binaries, e.g.
// "v2-0123456789ab". A library with other helper binaries expects another
// tag, so a stale image in a registry is never used by mistake.
func Tag() string {
	h := sha256.New()
	for _, a := range Archs {
		b, _ := helperbin.For(a)
		h.Write(b)
	}
	return fmt.Sprintf("v%d-%s", proto.Version, hex.EncodeToString(h.Sum(nil))[:12])
}

// Ref returns repo:Tag(); repo "" is Repository.
func Ref(repo string) string {
	if repo == "" {
		repo = Repository
	}
	return repo + ":" + Tag()
}

// blob is one content-addressed file of the archive.
type blob struct {
	mediaType string
	data      []byte
}

func (b blob) digest() string {
	sum := sha256.Sum256(b.data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (b blob) descriptor(extra map[string]any) map[string]any {
	d := map[string]any{"mediaType": b.mediaType, "digest": b.digest(), "size": len(b.data)}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// epoch is every file's and the config's time: the archive is
// reproducible, byte for byte.
var epoch = time.Unix(0, 0).UTC()

// WriteOCI writes the image as an OCI image layout in a tar archive
// (what `docker save`, `ctr import`, `skopeo copy oci-archive:` and
// `crane push` read), named ref (e.g. Ref("")). The same binaries give
// the same bytes.
func WriteOCI(w io.Writer, ref string) error {
	var blobs []blob
	var manifests []map[string]any
	for _, arch := range Archs {
		bin, err := helperbin.For(arch)
		if err != nil {
			return err
		}
		layer, diffID, err := layerOf(bin)
		if err != nil {
			return err
		}
		cfg, _ := json.Marshal(map[string]any{
			"architecture": arch, "os": "linux", "created": epoch.Format(time.RFC3339),
			"config": map[string]any{"Entrypoint": []string{BinaryPath}, "Cmd": []string{"version"}},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		})
		cb := blob{"application/vnd.oci.image.config.v1+json", cfg}
		lb := blob{"application/vnd.oci.image.layer.v1.tar+gzip", layer}
		man, _ := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
			"config": cb.descriptor(nil), "layers": []any{lb.descriptor(nil)},
		})
		mb := blob{"application/vnd.oci.image.manifest.v1+json", man}
		blobs = append(blobs, cb, lb, mb)
		manifests = append(manifests, mb.descriptor(map[string]any{
			"platform": map[string]string{"architecture": arch, "os": "linux"},
		}))
	}
	idx, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests,
	})
	ib := blob{"application/vnd.oci.image.index.v1+json", idx}
	blobs = append(blobs, ib)
	top, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []any{ib.descriptor(map[string]any{"annotations": map[string]string{
			"io.containerd.image.name":          fullName(ref),
			"org.opencontainers.image.ref.name": tagOf(ref),
		}})},
	})
	tw := tar.NewWriter(w)
	files := []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", top}}
	for _, b := range blobs {
		files = append(files, struct {
			name string
			data []byte
		}{"blobs/sha256/" + b.digest()[len("sha256:"):], b.data})
	}
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.name] {
			continue
		}
		seen[f.name] = true
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerOf returns a gzipped tar holding bin at BinaryPath, and the digest
// of the uncompressed tar (the config's diff ID).
func layerOf(bin []byte) ([]byte, string, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: BinaryPath[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: epoch}); err != nil {
		return nil, "", err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// fullName is ref as containerd names images: docker.io/ added to a name
// without a registry, library/ to a single-component one.
func fullName(ref string) string {
	first, _, hasSlash := cut(ref, '/')
	if !hasSlash {
		return "docker.io/library/" + ref
	}
	if !containsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + ref
	}
	return ref
}

// tagOf is ref's tag ("latest" if none).
func tagOf(ref string) string {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return ref[i+1:]
		}
	}
	return "latest"
}

func cut(s string, c byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}
