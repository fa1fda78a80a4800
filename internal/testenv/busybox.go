package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// hostBusybox is where Debian's busybox-static installs its binary.
const hostBusybox = "/bin/busybox"

func ensureBusybox(ctx context.Context, cli *client.Client) error {
	ok, oldID, err := imageCurrent(ctx, cli, BusyboxImage, busyboxRecipe)
	if err != nil || ok {
		return err
	}
	start := time.Now()
	logf("building %s from %s", BusyboxImage, hostBusybox)
	rootfs, err := busyboxRootfs(ctx)
	if err != nil {
		return err
	}
	if err := importImage(ctx, cli, bytes.NewReader(rootfs), BusyboxImage, busyboxRecipe,
		[]string{`CMD ["/bin/sh"]`}); err != nil {
		return err
	}
	removeOld(ctx, cli, oldID)
	logf("built %s in %s", BusyboxImage, since(start))
	return nil
}

// busyboxRootfs returns the image's root filesystem as a tar archive.
func busyboxRootfs(ctx context.Context) ([]byte, error) {
	bin, err := os.ReadFile(hostBusybox)
	if err != nil {
		return nil, fmt.Errorf("testenv: %s is needed to build %s: %w (install it with `apt-get install busybox-static`)", hostBusybox, BusyboxImage, err)
	}
	if err := checkStatic(hostBusybox); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, hostBusybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("testenv: %s --list: %w", hostBusybox, err)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	add := func(h *tar.Header, body []byte) {
		h.ModTime = mtime
		h.Format = tar.FormatPAX
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		if err == nil {
			err = tw.WriteHeader(h)
		}
		if err == nil && len(body) > 0 {
			_, err = tw.Write(body)
		}
	}
	dir := func(name string, mode int64, uid int) {
		add(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid}, nil)
	}
	file := func(name string, mode int64, body string) {
		add(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode}, []byte(body))
	}
	symlink := func(name, target string) {
		add(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, nil)
	}

	for _, d := range []string{"bin", "dev", "etc", "home", "proc", "sys", "usr", "usr/bin", "var"} {
		dir(d, 0o755, 0)
	}
	dir("root", 0o700, 0)
	dir("tmp", 0o1777, 0)
	dir("var/tmp", 0o1777, 0)
	dir("home/sandbox", 0o755, 1000)

	add(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755}, bin)
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		symlink("bin/"+applet, "busybox")
	}
	symlink("usr/bin/env", "/bin/busybox")

	file("etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/sh\n"+
		"sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
	file("etc/group", 0o644, "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n")

	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("testenv: writing busybox rootfs: %w", err)
	}
	return buf.Bytes(), nil
}

// checkStatic fails if path is a dynamically linked ELF binary, which would
// not run in an image without a C library (Debian's "busybox" package,
// unlike "busybox-static").
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("testenv: reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("testenv: %s is dynamically linked; install the static one with `apt-get install busybox-static`", path)
		}
	}
	return nil
}
