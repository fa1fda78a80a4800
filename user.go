package sandbox

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// resolveUser finds the uid and gid of a Docker user spec ("name", "uid",
// "uid:gid", "name:group") in the created container's /etc/passwd and
// /etc/group. An empty spec is root.
func resolveUser(ctx context.Context, cli dockerAPI, id, spec string) (uid, gid int, err error) {
	if spec == "" {
		return 0, 0, nil
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	uid, gid = -1, -1
	if n, err := strconv.Atoi(name); err == nil {
		uid, gid = n, n
	}
	if uid < 0 || !hasGroup {
		entry, err := lookup(ctx, cli, id, "/etc/passwd", name, 2)
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
			entry, err := lookup(ctx, cli, id, "/etc/group", group, 2)
			if err != nil {
				return 0, 0, fmt.Errorf("group %q: %w", group, err)
			}
			gid, _ = strconv.Atoi(entry[2])
		}
	}
	return uid, gid, nil
}

// lookup finds the colon-separated entry whose first field (or, for a
// numeric key, field idField) is key, in a file of the created container.
func lookup(ctx context.Context, cli dockerAPI, id, file, key string, idField int) ([]string, error) {
	res, err := cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: file})
	if err != nil {
		return nil, fmt.Errorf("read %s in the image: %w", file, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
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
	return nil, fmt.Errorf("no entry in %s of the image", file)
}
