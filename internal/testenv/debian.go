package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// debianSuite is the release debootstrap installs.
const debianSuite = "bookworm"

// mirrorEnv overrides the Debian mirror read from the host's apt sources.
const mirrorEnv = "DOCKERSANDBOX_DEBIAN_MIRROR"

// debootstrapImage is a test image built with debootstrap: its root
// filesystem cached under the cache directory, then imported with its
// recipe as a label.
type debootstrapImage struct {
	ref     string   // the image's name
	recipe  string   // its label's value and the rootfs marker's: a change rebuilds both
	cache   string   // the rootfs's directory in the cache directory
	include []string // debootstrap --include
	// apt is installed after debootstrap with apt-get in the rootfs, from
	// the package lists debootstrap left there: apt resolves the virtual
	// packages debootstrap's resolver drops (npm's dependencies need it).
	apt   []string
	check string // a file every complete rootfs has, relative to it
}

// debianImage is DebianImage's recipe.
var debianImage = debootstrapImage{ref: DebianImage, recipe: debianRecipe, cache: "debian-rootfs",
	include: []string{"python3"}, check: "usr/bin/python3"}

func ensureDebian(ctx context.Context, cli *client.Client) error {
	return ensureDebootstrapped(ctx, cli, debianImage)
}

// ensureDebootstrapped builds img unless the engine has it from its
// current recipe.
func ensureDebootstrapped(ctx context.Context, cli *client.Client, img debootstrapImage) error {
	ok, oldID, err := imageCurrent(ctx, cli, img.ref, img.recipe)
	if err != nil || ok {
		return err
	}
	start := time.Now()
	if os.Geteuid() != 0 {
		return fmt.Errorf("testenv: building %s needs root (debootstrap, and reading a root-owned rootfs); run the tests as root or build it once with `sudo go run ./internal/testenv/cmd/testimages`", img.ref)
	}
	dir, err := cacheDir()
	if err != nil {
		return err
	}
	rootfs := filepath.Join(dir, img.cache)
	if err := ensureRootfs(ctx, img, rootfs); err != nil {
		return err
	}
	logf("importing %s from %s", img.ref, rootfs)
	if err := importDir(ctx, cli, rootfs, img.ref, img.recipe); err != nil {
		return err
	}
	removeOld(ctx, cli, oldID)
	logf("built %s in %s", img.ref, since(start))
	return nil
}

// ensureRootfs debootstraps img into rootfs unless its marker file says a
// previous run of the current recipe completed.
func ensureRootfs(ctx context.Context, img debootstrapImage, rootfs string) error {
	marker := rootfs + ".done"
	if b, err := os.ReadFile(marker); err == nil && string(b) == img.recipe+"\n" {
		if _, err := os.Stat(filepath.Join(rootfs, img.check)); err == nil {
			logf("reusing cached Debian rootfs %s", rootfs)
			return nil
		}
	}
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		return fmt.Errorf("testenv: debootstrap is needed to build %s: install it with `apt-get install debootstrap`", img.ref)
	}
	mirror, err := debianMirror()
	if err != nil {
		return err
	}

	// Start from scratch: an interrupted run may have left a partial tree.
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := removeTree(rootfs); err != nil {
		return err
	}

	logPath := rootfs + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer logFile.Close()
	start := time.Now()
	logf("debootstrap %s from %s into %s (takes a minute or two; log: %s)", debianSuite, mirror, rootfs, logPath)
	cmd := exec.CommandContext(ctx, debootstrap, "--variant=minbase", "--include="+strings.Join(img.include, ","), debianSuite, rootfs, mirror)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 10 * time.Second
	killWithParent(cmd)
	if err := cmd.Run(); err != nil {
		msg := fmt.Sprintf("testenv: debootstrap failed: %v\n--- %s (tail) ---\n%s", err, logPath, tail(logPath, 30))
		if inner := filepath.Join(rootfs, "debootstrap/debootstrap.log"); fileExists(inner) {
			msg += fmt.Sprintf("\n--- %s (tail) ---\n%s", inner, tail(inner, 30))
		}
		return errors.New(msg)
	}
	logf("debootstrap done in %s", since(start))
	if len(img.apt) > 0 {
		if err := aptInstall(ctx, rootfs, img.apt, logFile, logPath); err != nil {
			return err
		}
	}

	if err := customizeDebian(rootfs); err != nil {
		return err
	}
	if err := os.WriteFile(marker, []byte(img.recipe+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// aptInstall installs pkgs, without their recommendations, into the
// debootstrapped rootfs with its own apt-get, chrooted, from the package
// lists debootstrap left in it; then drops the downloads and the lists.
func aptInstall(ctx context.Context, rootfs string, pkgs []string, logFile io.Writer, logPath string) error {
	start := time.Now()
	logf("apt-get install %s in %s", strings.Join(pkgs, " "), rootfs)
	args := append([]string{rootfs, "apt-get", "install", "-y", "--no-install-recommends", "-o", "Dpkg::Use-Pty=0"}, pkgs...)
	cmd := exec.CommandContext(ctx, "chroot", args...)
	cmd.Env = []string{defaultPath, "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8", "HOME=/root"}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 10 * time.Second
	killWithParent(cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testenv: apt-get install %s in %s failed: %v\n--- %s (tail) ---\n%s",
			strings.Join(pkgs, " "), rootfs, err, logPath, tail(logPath, 30))
	}
	lists, _ := filepath.Glob(filepath.Join(rootfs, "var/lib/apt/lists/*_*"))
	for _, l := range lists {
		_ = os.Remove(l)
	}
	logf("apt-get install done in %s", since(start))
	return nil
}

// customizeDebian adds the "sandbox" user (uid/gid 1000, home /home/sandbox)
// and drops the downloaded packages.
func customizeDebian(rootfs string) error {
	appendLine := func(rel, name, line string) error {
		path := filepath.Join(rootfs, rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, name+":") {
				return nil
			}
		}
		if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
			line = "\n" + line
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(line + "\n"); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	err := errors.Join(
		appendLine("etc/passwd", "sandbox", "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash"),
		appendLine("etc/group", "sandbox", "sandbox:x:1000:"),
		appendLine("etc/shadow", "sandbox", "sandbox:*:19000:0:99999:7:::"),
		appendLine("etc/gshadow", "sandbox", "sandbox:!::"),
	)
	if err != nil {
		return fmt.Errorf("testenv: adding user sandbox to Debian rootfs: %w", err)
	}

	home := filepath.Join(rootfs, "home/sandbox")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	skel, _ := os.ReadDir(filepath.Join(rootfs, "etc/skel"))
	for _, e := range skel {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(rootfs, "etc/skel", e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(home, e.Name()), b, 0o644)
		}
		if err == nil {
			err = os.Lchown(filepath.Join(home, e.Name()), 1000, 1000)
		}
		if err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
	}
	if err := os.Chown(home, 1000, 1000); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}

	debs, _ := filepath.Glob(filepath.Join(rootfs, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		_ = os.Remove(d)
	}
	return nil
}

// importDir streams `tar -C dir -c --numeric-owner .` into the daemon as
// ref, labelled with recipe.
func importDir(ctx context.Context, cli *client.Client, dir, ref, recipe string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "tar", "-C", dir, "-c", "--numeric-owner", ".")
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: running tar: %w", err)
	}
	ierr := importImage(ctx, cli, out, ref, recipe,
		[]string{"ENV LANG=C.UTF-8", `CMD ["/bin/bash"]`})
	if ierr != nil {
		cancel() // stops tar if the import gave up early
	}
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if ierr != nil {
		return ierr
	}
	if werr != nil {
		return fmt.Errorf("testenv: tar of %s failed: %v: %s", dir, werr, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// debianMirror returns the Debian archive URL to debootstrap from: $DOCKERSANDBOX_DEBIAN_MIRROR,
// else the first mirror for the bookworm suite in the host's apt sources, else
// the first mirror of any release suite there.
func debianMirror() (string, error) {
	if m := os.Getenv(mirrorEnv); m != "" {
		return m, nil
	}
	type entry struct{ uri, suite string }
	var entries []entry

	// deb822 sources (one stanza per paragraph).
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, para := range strings.Split(string(b), "\n\n") {
			fields := map[string]string{}
			last := ""
			for _, line := range strings.Split(para, "\n") {
				if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
					continue
				}
				if line[0] == ' ' || line[0] == '\t' { // continuation line
					if last != "" {
						fields[last] += " " + strings.TrimSpace(line)
					}
					continue
				}
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				last = strings.ToLower(strings.TrimSpace(k))
				fields[last] = strings.TrimSpace(v)
			}
			if !slices.Contains(strings.Fields(fields["types"]), "deb") || strings.EqualFold(fields["enabled"], "no") {
				continue
			}
			uris := strings.Fields(fields["uris"])
			if len(uris) == 0 {
				continue
			}
			for _, s := range strings.Fields(fields["suites"]) {
				entries = append(entries, entry{uris[0], s})
			}
		}
	}

	// One-line sources: deb [options] URI suite components...
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, path := range append([]string{"/etc/apt/sources.list"}, lists...) {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			rest, ok := strings.CutPrefix(line, "deb ")
			if !ok {
				continue
			}
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "[") {
				if i := strings.Index(rest, "]"); i >= 0 {
					rest = rest[i+1:]
				}
			}
			if fs := strings.Fields(rest); len(fs) >= 2 {
				entries = append(entries, entry{fs[0], fs[1]})
			}
		}
		f.Close()
	}

	for _, e := range entries {
		if e.suite == debianSuite {
			return e.uri, nil
		}
	}
	for _, e := range entries { // a host on another release: same archive, other suite
		if !strings.Contains(e.suite, "-") && !strings.Contains(e.uri, "security") {
			return e.uri, nil
		}
	}
	return "", fmt.Errorf("testenv: no Debian mirror found in /etc/apt/sources.list{,.d/} for %s; set %s to a Debian archive URL", debianSuite, mirrorEnv)
}

// removeTree removes dir after unmounting anything an interrupted
// debootstrap left mounted below it (proc, sys), so that RemoveAll never
// walks into a live filesystem.
func removeTree(dir string) error {
	if err := UnmountBelow(dir); err != nil {
		return fmt.Errorf("testenv: cleaning %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("testenv: cleaning %s: %w", dir, err)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
