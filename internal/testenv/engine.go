package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// What tests do to a container behind the library's back, through the
// Engine API (or the relayed engine's Exec and CopyTo, see Relayed) (never through the helper, which a test may have made
// hostile), as an attacker inside it would.

// BuildTool builds pkg, a main package of the root module found at root
// (a directory), for the host (the test images' architecture), statically
// and without the race detector, with the build tags given, into a
// directory of tb's, and returns the binary's path.
func BuildTool(tb testing.TB, root, pkg string, tags ...string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), path.Base(pkg))
	args := []string{"build", "-trimpath"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "-o", out, "./"+pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v: %s", pkg, err, b)
	}
	return out
}

// File is one file of CopyFiles.
type File struct {
	Name    string
	Content []byte
	Mode    int64
}

// CopyFiles puts files into dir of container id, owned by root.
func CopyFiles(tb testing.TB, cli *client.Client, id, dir string, files ...File) {
	tb.Helper()
	if e := Engine(); e != nil {
		copyEngine(tb, e, id, dir, files...)
		return
	}
	buf := filesTar(tb, files)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dir, Content: buf}); err != nil {
		tb.Fatalf("copy into %s: %v", dir, err)
	}
}

// Exec runs cmd in container id as user, requires exit status 0 and
// returns its output (stdout and stderr, as the engine multiplexes them).
func Exec(tb testing.TB, cli *client.Client, id, user string, cmd ...string) string {
	tb.Helper()
	if e := Engine(); e != nil {
		return execEngine(tb, e, id, user, cmd...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{User: user, AttachStdout: true, AttachStderr: true, Cmd: cmd})
	if err != nil {
		tb.Fatalf("exec %v: %v", cmd, err)
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		tb.Fatalf("exec %v: %v", cmd, err)
	}
	var out bytes.Buffer
	_, _ = out.ReadFrom(att.Reader)
	att.Close()
	info, err := cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		tb.Fatalf("exec %v: %v", cmd, err)
	}
	if info.ExitCode != 0 {
		tb.Fatalf("%v: exit %d: %q", cmd, info.ExitCode, out.String())
	}
	return out.String()
}

// SandboxExists reports whether a container of the library
// (LabelSandbox) with that ID exists, in any state.
func SandboxExists(tb testing.TB, id string) bool {
	tb.Helper()
	if e := Engine(); e != nil {
		return sandboxExistsEngine(tb, e, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Client(tb).ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelSandbox).Add("id", id),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return len(res.Items) > 0
}

// filesTar is files as a tar archive, owned by root.
func filesTar(tb testing.TB, files []File) *bytes.Buffer {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Size: int64(len(f.Content)), Mode: f.Mode, ModTime: time.Now()}
		if err := tw.WriteHeader(hdr); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(f.Content); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return &buf
}
