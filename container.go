package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Where the helper lives in the container.
const (
	helperDir  = "/.dockersandbox"
	helperPath = helperDir + "/sandbox-helper"
)

// applySecureProfile fills in what WithSecureProfile implies, where other
// options left the setting open.
func (o *options) applySecureProfile() {
	if !o.secure {
		return
	}
	if o.user == "" {
		o.user = SecureUser
	}
	if o.networkMode == "" {
		o.networkMode = "none"
	}
	if o.pidsLimit == 0 {
		o.pidsLimit = SecurePidsLimit
	}
	if o.memory == 0 {
		o.memory = SecureMemory
	}
	o.capDrop = append(o.capDrop, "ALL")
	o.readOnlyRootfs = true
}

// containerConfig translates the options into Docker's configuration.
func (o *options) containerConfig() (*container.Config, *container.HostConfig) {
	o.applySecureProfile()
	cfg := &container.Config{
		Image:      o.image,
		WorkingDir: o.workingDir,
		Env:        o.env,
		User:       o.user,
	}
	host := &container.HostConfig{
		Binds:          o.binds,
		NetworkMode:    container.NetworkMode(o.networkMode),
		DNS:            o.dns,
		ShmSize:        o.shmSize,
		ReadonlyRootfs: o.readOnlyRootfs,
		CapDrop:        o.capDrop,
		Runtime:        o.runtime,
		Resources: container.Resources{
			Memory:   o.memory,
			NanoCPUs: o.nanoCPUs,
			Devices:  o.devices,
			Ulimits:  o.ulimits,
		},
	}
	if o.pidsLimit > 0 {
		host.PidsLimit = &o.pidsLimit
	}
	if o.gpus != 0 {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver: "nvidia", Count: o.gpus, Capabilities: [][]string{{"gpu"}},
		}}
	}
	if o.secure {
		// Docker would create a WorkingDir on the tmpfs with mode 0755,
		// undoing mode=1777; requests carry the directory anyway.
		cfg.WorkingDir = ""
		host.SecurityOpt = append(host.SecurityOpt, "no-new-privileges")
	}
	for _, fn := range o.configure {
		fn(cfg, host)
	}
	if o.secure {
		// Writable scratch space where nothing else is mounted (a volume,
		// or a mount of WithContainerConfig's).
		for _, dir := range []string{"/tmp", o.workingDir} {
			if dir != "/" && !mountsAt(host, dir) {
				host.Mounts = append(host.Mounts, scratchMount(dir))
			}
		}
	}
	// The library's own settings come last: the helper must be PID 1, and
	// the labels must mark the container.
	cfg.Entrypoint = []string{helperPath, "init"}
	if o.lifetime > 0 {
		cfg.Entrypoint = append(cfg.Entrypoint, "-lifetime", o.lifetime.String())
	}
	if o.idleTimeout > 0 {
		cfg.Entrypoint = append(cfg.Entrypoint, "-idle", o.idleTimeout.String())
	}
	if o.procsIdle {
		cfg.Entrypoint = append(cfg.Entrypoint, "-process-activity=false")
	}
	if (o.lifetime > 0 || o.idleTimeout > 0) && o.autoRemove {
		host.AutoRemove = true // an abandoned sandbox that ends itself is also removed
	}
	cfg.Cmd = nil
	cfg.Labels = o.containerLabels(time.Now())
	cfg.Labels[LabelWorkingDir] = o.workingDir
	if o.snap.id != "" {
		cfg.Labels[LabelFromSnapshot] = o.snap.id
	}
	stop := 1
	cfg.StopTimeout = &stop
	if o.readOnlyRootfs {
		// The helper is copied in before start; a read-only rootfs refuses
		// that, an anonymous volume (removed with the container) accepts it.
		if cfg.Volumes == nil {
			cfg.Volumes = map[string]struct{}{}
		}
		cfg.Volumes[helperDir] = struct{}{}
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
func mountsAt(host *container.HostConfig, dir string) bool {
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
func prepareFS(ctx context.Context, cli dockerAPI, id string, o *options, bin []byte, uid, gid int) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dest, name := "/", helperPath[1:]
	var hdrs []*tar.Header
	if o.readOnlyRootfs {
		dest, name = helperDir, path.Base(helperPath)
	} else {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeDir, Name: helperDir[1:] + "/", Mode: 0o755, ModTime: now})
		if o.workingDir != "/" {
			hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeDir, Name: o.workingDir[1:] + "/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: now})
		}
	}
	hdrs = append(hdrs, procRunDir(path.Dir(name), uid, gid, now)) // the process table's socket (process_options.go)
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
