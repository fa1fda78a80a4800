package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// labelImageVersion marks the images built here; an image whose label does
// not match the current recipe version is rebuilt.
const labelImageVersion = "com.dockersandbox.testenv.recipe"

// Recipe versions: bump one to force a rebuild of that image everywhere.
const (
	busyboxRecipe = "busybox-1"
	debianRecipe  = "debian-bookworm-1"
)

// defaultPath is set explicitly because imported images have no environment.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// inProcess serialises callers inside one process; the file lock does it
// across processes (go test runs packages in parallel).
var inProcess, toolsInProcess sync.Mutex

// EnsureImages makes sure BusyboxImage and DebianImage exist, building them
// locally if needed. Concurrent callers, in this or other processes, are
// serialised with a lock file in the cache directory.
func EnsureImages(ctx context.Context, cli *client.Client) error {
	unlock, err := lockImages(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := ensureBusybox(ctx, cli); err != nil {
		return err
	}
	return ensureDebian(ctx, cli)
}

// EnsureBusybox makes sure BusyboxImage exists, building it from the host's
// static /bin/busybox (Debian package busybox-static) if it is absent.
func EnsureBusybox(ctx context.Context, cli *client.Client) error {
	unlock, err := lockImages(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return ensureBusybox(ctx, cli)
}

// EnsureDebian makes sure DebianImage exists, building it with debootstrap
// (as root, from the Debian mirror of the host's apt sources) if it is absent.
// The root filesystem is cached under $XDG_CACHE_HOME (or ~/.cache)
// /dockersandbox/debian-rootfs and reused once complete.
func EnsureDebian(ctx context.Context, cli *client.Client) error {
	unlock, err := lockImages(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return ensureDebian(ctx, cli)
}

// cacheDir returns (and creates) the testenv cache directory.
func cacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("testenv: no cache directory: set XDG_CACHE_HOME or HOME: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(base, "dockersandbox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testenv: creating cache directory: %w", err)
	}
	return dir, nil
}

// lockImages takes the in-process mutex and the cross-process file lock
// of the busybox and Debian images.
func lockImages(ctx context.Context) (unlock func(), err error) {
	return lockNamed(ctx, &inProcess, "images.lock")
}

// lockTools is lockImages for ToolsImage, whose build (minutes, cold) does
// not hold up the others'.
func lockTools(ctx context.Context) (unlock func(), err error) {
	return lockNamed(ctx, &toolsInProcess, "tools.lock")
}

// lockNamed takes mu and the file lock name in the cache directory.
func lockNamed(ctx context.Context, mu *sync.Mutex, name string) (unlock func(), err error) {
	mu.Lock()
	dir, err := cacheDir()
	if err != nil {
		mu.Unlock()
		return nil, err
	}
	release, err := lockFile(ctx, filepath.Join(dir, name))
	if err != nil {
		mu.Unlock()
		return nil, fmt.Errorf("testenv: locking test images: %w", err)
	}
	return func() {
		release()
		mu.Unlock()
	}, nil
}

// imageCurrent reports whether ref exists and was built from recipe.
// It returns the ID of an existing image (current or not).
func imageCurrent(ctx context.Context, cli *client.Client, ref, recipe string) (current bool, id string, err error) {
	res, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("testenv: inspecting image %s: %w", ref, err)
	}
	var labels map[string]string
	if res.Config != nil {
		labels = res.Config.Labels
	}
	return labels[labelImageVersion] == recipe, res.ID, nil
}

// importImage imports the root filesystem tarball src as ref with the given
// Dockerfile-style changes, then checks that ref exists.
func importImage(ctx context.Context, cli *client.Client, src io.Reader, ref, recipe string, changes []string) error {
	changes = append([]string{
		"ENV " + defaultPath,
		fmt.Sprintf("LABEL %s=%s", labelImageVersion, recipe),
	}, changes...)
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: src, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes, Message: "built by internal/testenv"})
	if err != nil {
		return fmt.Errorf("testenv: importing %s: %w", ref, err)
	}
	defer rc.Close()
	// The response is a stream of JSON progress messages; errors come in-band.
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("testenv: importing %s: reading daemon response: %w", ref, err)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return fmt.Errorf("testenv: importing %s: %s", ref, msg.ErrorDetail.Message)
		}
		if msg.Error != "" {
			return fmt.Errorf("testenv: importing %s: %s", ref, msg.Error)
		}
	}
	ok, _, err := imageCurrent(ctx, cli, ref, recipe)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("testenv: importing %s: image missing or without label %s=%s after import", ref, labelImageVersion, recipe)
	}
	return nil
}

// removeOld removes the image a rebuild replaced, if nothing uses it anymore.
func removeOld(ctx context.Context, cli *client.Client, oldID string) {
	if oldID != "" {
		_, _ = cli.ImageRemove(ctx, oldID, client.ImageRemoveOptions{})
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", args...)
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
