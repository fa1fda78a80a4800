package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// dockerConfig translates a spec into Docker's configuration; extra, if
// not nil, applies Docker-only settings before the library's own (the
// scratch mounts, where extra mounted nothing; the helper as PID 1; the
// labels).
func Config(sp *engine.Spec, extra func(*container.Config, *container.HostConfig)) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:      sp.Image,
		WorkingDir: sp.WorkingDir,
		Env:        sp.Env,
		User:       sp.User,
	}
	host := &container.HostConfig{
		ReadonlyRootfs: sp.ReadOnlyRootfs,
		CapDrop:        sp.CapDrop,
		Resources:      container.Resources{Memory: sp.Memory, NanoCPUs: sp.NanoCPUs},
		// The engine keeps nothing of PID 1's output: the container's root
		// can write to /proc/1/fd/1 without end, and the default json-file
		// driver would keep it all on the host's disk (50 MB written made a
		// 300 MB log). The helper writes its ready line only, read through
		// an attach (start.go), which needs no log.
		LogConfig: container.LogConfig{Type: "none"},
	}
	if sp.NetworkNone {
		host.NetworkMode = "none"
	}
	if sp.PidsLimit > 0 {
		limit := sp.PidsLimit
		host.PidsLimit = &limit
	}
	if slices.Contains(sp.ScratchDirs, sp.WorkingDir) {
		cfg.WorkingDir = "" // Docker would create it on the tmpfs with mode 0755
	}
	if sp.NoNewPrivileges {
		host.SecurityOpt = append(host.SecurityOpt, "no-new-privileges")
	}
	if extra != nil {
		extra(cfg, host)
	}
	for _, dir := range sp.ScratchDirs {
		if !MountsAt(host, dir) {
			host.Mounts = append(host.Mounts, scratchMount(dir))
		}
	}
	// The library's own settings come last: the helper must be PID 1, and
	// the labels must mark the container.
	cfg.Entrypoint = slices.Clone(sp.Command)
	cfg.Cmd = nil
	if sp.RemoveOnExit {
		host.AutoRemove = true
	}
	cfg.Labels = maps.Clone(sp.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	if sp.StopGrace > 0 {
		stop := int(sp.StopGrace / time.Second)
		cfg.StopTimeout = &stop
	}
	if sp.ReadOnlyRootfs {
		// The helper is copied in before start; a read-only rootfs refuses
		// that, an anonymous volume (removed with the container) accepts it.
		if cfg.Volumes == nil {
			cfg.Volumes = map[string]struct{}{}
		}
		cfg.Volumes[sp.Helper.Dir] = struct{}{}
	}
	return cfg, host
}

// scratchMount is a writable in-memory directory at target, for the secure
// profile: a tmpfs (mode 1777, nosuid, nodev), made as an anonymous volume
// of the local driver rather than a plain tmpfs mount because Docker's
// archive API, which UploadFiles and DownloadFiles use, does not see plain
// tmpfs mounts (a download finds nothing, an upload lands under the mount,
// or is refused on a read-only rootfs). The volume is removed with the
// container. NoCopy keeps the image's content (and its owner and mode,
// which would undo 1777) out of it, as a tmpfs would.
func scratchMount(target string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Target: target, VolumeOptions: &mount.VolumeOptions{
		NoCopy: true,
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type": "tmpfs", "device": "tmpfs", "o": "mode=1777,nosuid,nodev",
		}},
	}}
}

// mountsAt reports whether host mounts something at dir.
func MountsAt(host *container.HostConfig, dir string) bool {
	if _, ok := host.Tmpfs[dir]; ok {
		return true
	}
	for _, b := range host.Binds {
		if parts := strings.Split(b, ":"); len(parts) > 1 && path.Clean(parts[1]) == dir {
			return true
		}
	}
	return slices.ContainsFunc(host.Mounts, func(m mount.Mount) bool { return path.Clean(m.Target) == dir })
}

// prepareFS copies the helper into the created container and creates the
// working directory owned by the sandbox's user (uid, gid), in one archive.
// With a read-only rootfs only the helper's volume accepts files; the
// working directory is then left to Docker.
func prepareFS(ctx context.Context, cli API, id string, sp *engine.Spec, bin []byte, uid, gid int) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dir, bpath := sp.Helper.Dir, sp.Helper.Path
	dest, name := "/", bpath[1:]
	var hdrs []*tar.Header
	if sp.ReadOnlyRootfs {
		dest, name = dir, path.Base(bpath)
	} else {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, ModTime: now})
		if sp.WorkingDir != "/" {
			hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeDir, Name: sp.WorkingDir[1:] + "/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: now})
		}
	}
	hdrs = append(hdrs, procRunDir(path.Dir(name), uid, gid, now)) // the process table's socket
	hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(bin)), ModTime: now})
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dest, Content: &buf})
	if err != nil {
		return fmt.Errorf("copy the helper into the container: %w", err)
	}
	return nil
}

// procRunDir is the archive entry of the directory where the helper's PID 1
// serves its process table: dir/run, entered only by the sandbox's user
// (uid, gid), who runs PID 1.
func procRunDir(dir string, uid, gid int, now time.Time) *tar.Header {
	name := "run/"
	if dir != "." {
		name = dir + "/run/"
	}
	return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o700, Uid: uid, Gid: gid, ModTime: now}
}
