package helper

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTarUntarRoundTrip: a directory archived by Tar and extracted by
// Untar elsewhere keeps its files, links and modes.
func TestTarUntarRoundTrip(t *testing.T) {
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "d", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "sub", "f"), []byte("hello"), 0o640))
	must(t, os.Symlink("/etc/passwd", filepath.Join(src, "d", "link")))
	var arch, out bytes.Buffer
	if Tar(filepath.Join(src, "d"), &arch) != 0 {
		t.Fatal("tar failed")
	}
	dst := t.TempDir()
	if code := Untar(dst, &arch, &out); code != 0 || !strings.Contains(out.String(), UntarDone) {
		t.Fatalf("untar: code %d, out %q", code, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dst, "d", "sub", "f"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("file: %q %v", b, err)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "d", "sub", "f")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if l, _ := os.Readlink(filepath.Join(dst, "d", "link")); l != "/etc/passwd" {
		t.Fatalf("link %q", l)
	}
}

// TestUntarStaysInside: entries that would land outside the directory,
// by name, are refused; a symlink already there is replaced, never
// followed: nothing is written outside.
func TestUntarStaysInside(t *testing.T) {
	outside := t.TempDir()
	for _, name := range []string{"../x", "/abs", "esc/x", "d/../../x"} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			must(t, os.Symlink(outside, filepath.Join(dst, "esc")))
			var arch, out bytes.Buffer
			tw := tar.NewWriter(&arch)
			must(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 1, Mode: 0o644}))
			_, _ = tw.Write([]byte("x"))
			must(t, tw.Close())
			code := Untar(dst, &arch, &out)
			if name == "esc/x" { // the symlink is replaced by a directory, as Docker does
				if fi, err := os.Lstat(filepath.Join(dst, "esc")); code != 0 || err != nil || !fi.IsDir() {
					t.Fatalf("code %d, esc: %v %v", code, fi, err)
				}
			} else if code == 0 {
				t.Fatalf("untar of %q succeeded", name)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("written outside: %v", ents)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestArchiveExitCodes: a missing directory or path, and a file over a
// directory, have exit codes of their own.
func TestArchiveExitCodes(t *testing.T) {
	var out bytes.Buffer
	if c := Tar("/no/such/path", &out); c != ExitNotExist {
		t.Errorf("tar of a missing path: %d", c)
	}
	if c := Untar("/no/such/dir", bytes.NewReader(nil), &out); c != ExitNotExist {
		t.Errorf("untar into a missing dir: %d", c)
	}
	dst := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dst, "d"), 0o755))
	var arch bytes.Buffer
	tw := tar.NewWriter(&arch)
	must(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "d", Size: 0, Mode: 0o644}))
	must(t, tw.Close())
	if c := Untar(dst, &arch, &out); c != ExitIsDir {
		t.Errorf("a file over a directory: %d", c)
	}
	dest := filepath.Join(t.TempDir(), "h", "helper")
	must(t, os.MkdirAll(filepath.Dir(dest), 0o755))
	ws := filepath.Join(t.TempDir(), "ws")
	if c := Install(dest, "", ws); c != 0 {
		t.Fatalf("install: %d", c)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("installed: %v %v", fi, err)
	}
	if fi, err := os.Stat(ws); err != nil || fi.Mode()&fs.ModeSticky == 0 {
		t.Errorf("workspace: %v %v", fi, err)
	}
	// The process table's directory is the installer's alone: PID 1 serves
	// it only then (not from a world-writable one).
	if fi, err := os.Stat(filepath.Join(filepath.Dir(dest), "run")); err != nil || fi.Mode()&fs.ModePerm != 0o700 || fi.Mode()&fs.ModeSticky != 0 {
		t.Errorf("run: %v %v", fi, err)
	}
}
