package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// durable measures snapshots, forks, persist and hydrate, each beside the
// engine's own operation in the same run (docker commit, ten plain New,
// docker cp out and in), on a working directory of 100 MiB (ten 10 MiB
// random files). Each is measured b.n times, at most 5.
func (b *bench) durable(ctx context.Context) (map[string]float64, error) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	var files []sandbox.FileUpload
	for i := range 10 {
		content := make([]byte, 10<<20)
		_, _ = rand.Read(content)
		files = append(files, sandbox.FileUpload{Path: fmt.Sprintf("tree/f%d", i), Content: content})
	}
	if _, err := sb.UploadFiles(ctx, files); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sandbox-bench-durable-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	n := min(b.n, 5)
	s := samples{}
	run := func(name string, args ...string) func() error {
		return func() error {
			out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %v: %s", name, err, out)
			}
			return nil
		}
	}
	for i := range n {
		var snap *sandbox.Snapshot
		if err := s.time("snapshot_100m", func() (err error) { snap, err = sb.Snapshot(ctx); return err }); err != nil {
			return nil, err
		}
		var commitID []byte
		if err := s.time("docker_commit_100m", func() (err error) {
			commitID, err = exec.CommandContext(ctx, docker, "commit", sb.ID()).Output()
			return err
		}); err != nil {
			return nil, err
		}
		_ = exec.CommandContext(ctx, docker, "rmi", strings.TrimSpace(string(commitID))).Run()

		var forks []*sandbox.Sandbox
		err := s.time("fork_10", func() (err error) { forks, err = snap.Fork(ctx, 10); return err })
		for _, f := range forks {
			f.Close()
		}
		if err != nil {
			return nil, err
		}
		plain := make([]*sandbox.Sandbox, 10)
		err = s.time("new_10", func() error {
			return parallel(10, 10, func(j int) (err error) {
				plain[j], err = sandbox.New(ctx, b.opts...)
				return err
			})
		})
		for _, p := range plain {
			if p != nil {
				p.Close()
			}
		}
		if err != nil {
			return nil, err
		}
		if err := snap.Remove(ctx); err != nil {
			return nil, err
		}

		tarPath := filepath.Join(dir, fmt.Sprintf("persist%d.tar", i))
		if err := s.time("persist_100m", func() error {
			f, err := os.Create(tarPath)
			if err != nil {
				return err
			}
			defer f.Close()
			return sb.Persist(ctx, f, "tree")
		}); err != nil {
			return nil, err
		}
		cpDir := filepath.Join(dir, fmt.Sprintf("cp%d", i))
		if err := os.Mkdir(cpDir, 0o755); err != nil {
			return nil, err
		}
		if err := s.time("docker_cp_out_100m", run("docker cp out", "cp", sb.ID()+":"+sb.WorkingDir()+"/tree", cpDir)); err != nil {
			return nil, err
		}
		if err := s.time("hydrate_100m", func() error {
			f, err := os.Open(tarPath)
			if err != nil {
				return err
			}
			defer f.Close()
			return sb.Hydrate(ctx, f)
		}); err != nil {
			return nil, err
		}
		if err := s.time("docker_cp_in_100m", run("docker cp in", "cp", filepath.Join(cpDir, "tree"), sb.ID()+":"+sb.WorkingDir()+"/")); err != nil {
			return nil, err
		}
		_ = os.Remove(tarPath)
		_ = os.RemoveAll(cpDir)
	}
	return s.medians(), nil
}
