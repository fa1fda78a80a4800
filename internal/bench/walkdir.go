package bench

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// walkDir times fs.WalkDir over the sandbox's FS on a tree of 10,000
// files in 100 directories ("walkdir_10k", one request per directory on
// the shared channel), beside one Execute of find over the same tree
// inside the container ("find_10k").
func (b *bench) walkDir(ctx context.Context) (map[string]float64, error) {
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	const dir = "/tmp/walk10k"
	res, err := sb.Execute(ctx, "mkdir -p "+dir+" && cd "+dir+` && i=0; while [ $i -lt 100 ]; do mkdir d$i && (cd d$i && touch $(seq 100 | sed s/^/f/)) || exit 1; i=$((i+1)); done`)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("making the tree: %s", res.Output)
	}
	if err != nil {
		return nil, err
	}
	fsys := sb.FS(ctx)
	name := strings.TrimPrefix(dir, "/")
	s := samples{}
	for range b.n {
		if err := s.time("walkdir_10k", func() error {
			n := 0
			err := fs.WalkDir(fsys, name, func(_ string, _ fs.DirEntry, err error) error {
				n++
				return err
			})
			if err == nil && n != 10_101 {
				err = fmt.Errorf("walked %d entries, not 10,101", n)
			}
			return err
		}); err != nil {
			return nil, err
		}
		if err := s.time("find_10k", func() error {
			_, err := sb.Execute(ctx, "find "+dir+" >/dev/null")
			return err
		}); err != nil {
			return nil, err
		}
	}
	return s.medians(), nil
}
