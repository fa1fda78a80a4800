package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"path"
	"time"

	"github.com/moby/moby/api/types/container"
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
		host.Tmpfs = map[string]string{"/tmp": "rw,exec,nosuid,nodev,mode=1777"}
		if o.workingDir != "/" && o.workingDir != "/tmp" {
			host.Tmpfs[o.workingDir] = "rw,exec,nosuid,nodev,mode=1777"
		}
	}
	for _, fn := range o.configure {
		fn(cfg, host)
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
	if (o.lifetime > 0 || o.idleTimeout > 0) && o.autoRemove {
		host.AutoRemove = true // an abandoned sandbox that ends itself is also removed
	}
	cfg.Cmd = nil
	cfg.Labels = o.containerLabels(time.Now())
	cfg.Labels[LabelWorkingDir] = o.workingDir
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
