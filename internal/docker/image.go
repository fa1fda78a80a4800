package docker

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/dockersandbox/sandbox/internal/helperbin"
	"github.com/moby/moby/client"
)

// Pull says when a creation pulls the image.
type Pull int

const (
	// PullMissing pulls the image only when the daemon does not have it.
	PullMissing Pull = iota
	// PullAlways pulls the image every time.
	PullAlways
	// PullNever never pulls; a missing image is ErrImageNotFound.
	PullNever
)

// imageArch makes image available according to policy (writing pull
// progress to progress, if not nil) and returns its architecture and its
// user (its USER; "" for root).
func imageArch(ctx context.Context, cli API, image string, policy Pull, progress io.Writer) (arch, user string, err error) {
	if policy == PullAlways {
		if err := pull(ctx, cli, image, progress); err != nil {
			return "", "", err
		}
	}
	inspect, err := cli.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) && policy == PullMissing {
		if err := pull(ctx, cli, image, progress); err != nil {
			return "", "", err
		}
		inspect, err = cli.ImageInspect(ctx, image)
	}
	if cerrdefs.IsNotFound(err) {
		return "", "", fmt.Errorf("%w: %s is not on the daemon and the pull policy forbids pulling it", ErrImageNotFound, image)
	}
	if err != nil {
		return "", "", fmt.Errorf("sandbox: inspect image %s: %w", image, DaemonErr(err))
	}
	if inspect.Os != "" && inspect.Os != "linux" {
		return "", "", fmt.Errorf("%w: image %s is for %s, not linux", helperbin.ErrUnsupportedArch, image, inspect.Os)
	}
	if inspect.Config != nil {
		user = inspect.Config.User
	}
	return inspect.Architecture, user, nil
}

// pull pulls ref, writing one line per progress message to progress.
func pull(ctx context.Context, cli API, ref string, progress io.Writer) error {
	resp, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("sandbox: pull %s: %w", ref, DaemonErr(err))
	}
	if err != nil {
		return fmt.Errorf("%w: pull %s: %v", ErrImageNotFound, ref, err)
	}
	defer resp.Close()
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return fmt.Errorf("%w: pull %s: %v", ErrImageNotFound, ref, err)
		}
		if msg.Error != nil {
			return fmt.Errorf("%w: pull %s: %s", ErrImageNotFound, ref, msg.Error.Message)
		}
		if progress != nil {
			line := msg.Status
			if msg.ID != "" {
				line = msg.ID + ": " + line
			}
			if msg.Progress != nil && msg.Progress.Total > 0 {
				line += fmt.Sprintf(" %d/%d", msg.Progress.Current, msg.Progress.Total)
			}
			if _, err := fmt.Fprintln(progress, line); err != nil {
				return err
			}
		}
	}
	return nil
}
