package docker

import (
	"context"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// API lists the Docker client methods the sandbox calls; *client.Client
// implements it.
type API interface {
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImagePull(ctx context.Context, ref string, options client.ImagePullOptions) (client.ImagePullResponse, error)
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerStop(ctx context.Context, id string, options client.ContainerStopOptions) (client.ContainerStopResult, error)
	ContainerKill(ctx context.Context, id string, options client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerPause(ctx context.Context, id string, options client.ContainerPauseOptions) (client.ContainerPauseResult, error)
	ContainerUnpause(ctx context.Context, id string, options client.ContainerUnpauseOptions) (client.ContainerUnpauseResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ContainerStats(ctx context.Context, id string, options client.ContainerStatsOptions) (client.ContainerStatsResult, error)
	ServerVersion(ctx context.Context, options client.ServerVersionOptions) (client.ServerVersionResult, error)
	ExecCreate(ctx context.Context, id string, options client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, options client.ExecAttachOptions) (client.ExecAttachResult, error)
	CopyToContainer(ctx context.Context, id string, options client.CopyToContainerOptions) (client.CopyToContainerResult, error)
	CopyFromContainer(ctx context.Context, id string, options client.CopyFromContainerOptions) (client.CopyFromContainerResult, error)
	Close() error
}

var _ API = (*client.Client)(nil)

// isNotFound reports a missing container or object in a Docker client's
// error (the Docker engine and Docker-only paths). Podman sometimes
// answers a container being removed with a 500 whose text says so.
func IsNotFound(err error) bool {
	return cerrdefs.IsNotFound(err) || err != nil && strings.Contains(err.Error(), "no such container")
}

// removing reports whether err says that the container is being removed
// already (Docker's auto-remove of a sandbox that ended itself, say).
func Removing(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// isPodman reports whether the engine is Podman's Docker-compatible API,
// whose archive endpoints mishandle some path names (glob characters,
// backslashes, non-ASCII): transfers then go through the helper.
func IsPodman(ctx context.Context, cli API) bool {
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return false
	}
	if _, ok := podmanComponent(v); ok {
		return true
	}
	return strings.Contains(strings.ToLower(v.Platform.Name), "podman")
}

// podmanComponent returns the version of the Podman component of the
// daemon's version answer, if it has one.
func podmanComponent(v client.ServerVersionResult) (version string, ok bool) {
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return c.Version, true
		}
	}
	return "", false
}
