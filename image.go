package sandbox

import (
	"context"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ensureImage makes the image available according to the pull policy and
// returns its architecture.
func ensureImage(ctx context.Context, cli dockerAPI, o *options) (string, error) {
	return imageArch(ctx, cli, o.image, o.pullPolicy, o.pullProgress)
}

// imageArch makes image available according to policy (writing pull
// progress to progress, if not nil) and returns its architecture.
func imageArch(ctx context.Context, cli dockerAPI, image string, policy PullPolicy, progress io.Writer) (string, error) {
	if policy == PullAlways {
		if err := pull(ctx, cli, image, progress); err != nil {
			return "", err
		}
	}
	inspect, err := cli.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) && policy == PullMissing {
		if err := pull(ctx, cli, image, progress); err != nil {
			return "", err
		}
		inspect, err = cli.ImageInspect(ctx, image)
	}
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: %s is not on the daemon and the pull policy forbids pulling it", ErrImageNotFound, image)
	}
	if err != nil {
		return "", fmt.Errorf("sandbox: inspect image %s: %w", image, daemonErr(err))
	}
	if inspect.Os != "" && inspect.Os != "linux" {
		return "", fmt.Errorf("%w: image %s is for %s, not linux", ErrUnsupportedArch, image, inspect.Os)
	}
	return inspect.Architecture, nil
}

// pull pulls ref, writing one line per progress message to progress.
func pull(ctx context.Context, cli dockerAPI, ref string, progress io.Writer) error {
	resp, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("sandbox: pull %s: %w", ref, daemonErr(err))
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
