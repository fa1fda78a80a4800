package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// CopyFunc returns a tar archive of a file of a container (Docker's
// archive API, or an engine's CopyFrom).
type CopyFunc func(ctx context.Context, path string) (io.ReadCloser, error)

// dockerCopy is CopyFunc on cli's container id.
func ContainerCopy(cli API, id string) CopyFunc {
	return func(ctx context.Context, path string) (io.ReadCloser, error) {
		res, err := cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
		if err != nil {
			return nil, err
		}
		return res.Content, nil
	}
}

// ErrNoEntry: the user or group is not in the container's file.
var ErrNoEntry = errors.New("no entry")

// resolveUser finds the uid and gid of a Docker user spec ("name", "uid",
// "uid:gid", "name:group") in the container's /etc/passwd and /etc/group.
// An empty spec is root. A name that neither file has is ErrNoEntry.
func ResolveUser(ctx context.Context, cp CopyFunc, spec string) (uid, gid int, err error) {
	if spec == "" {
		return 0, 0, nil
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	uid, gid = -1, -1
	if n, err := strconv.Atoi(name); err == nil {
		uid, gid = n, n
	}
	if uid < 0 || !hasGroup {
		entry, err := lookup(ctx, cp, "/etc/passwd", name, 2)
		switch {
		case err == nil:
			uid, _ = strconv.Atoi(entry[2])
			gid, _ = strconv.Atoi(entry[3])
		case uid < 0:
			return 0, 0, fmt.Errorf("user %q: %w", name, err)
		}
	}
	if hasGroup {
		if n, err := strconv.Atoi(group); err == nil {
			gid = n
		} else {
			entry, err := lookup(ctx, cp, "/etc/group", group, 2)
			if err != nil {
				return 0, 0, fmt.Errorf("group %q: %w", group, err)
			}
			gid, _ = strconv.Atoi(entry[2])
		}
	}
	return uid, gid, nil
}

// lookup finds the colon-separated entry whose first field (or, for a
// numeric key, field idField) is key, in a file of the container.
func lookup(ctx context.Context, cp CopyFunc, file, key string, idField int) ([]string, error) {
	content, err := cp(ctx, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: the container has no %s", ErrNoEntry, file)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s in the image: %w", file, err)
	}
	defer content.Close()
	tr := tar.NewReader(content)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("read %s in the image: %w", file, err)
	}
	sc := bufio.NewScanner(io.LimitReader(tr, 4<<20))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 4 && file == "/etc/passwd" || len(f) < 3 {
			continue
		}
		if f[0] == key || f[idField] == key {
			return f, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s in the image: %w", file, err)
	}
	return nil, fmt.Errorf("%w in the container's %s", ErrNoEntry, file)
}
