package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/dockersandbox/sandbox"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// operations times each operation on one sandbox, with or without the
// shared helper channel.
func (b *bench) operations(ctx context.Context, shared bool) (map[string]float64, error) {
	sb, err := sandbox.New(ctx, append(b.opts, sandbox.WithSharedChannel(shared))...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	oneK := append([]byte("marker-A\n"), bytes.Repeat([]byte("0123456789abcdef"), 63)...)
	big := bytes.Repeat([]byte("x"), 32<<20)
	if _, err := sb.Execute(ctx, "true"); err != nil { // open the channel outside the timings
		return nil, err
	}
	ops := []struct {
		name string
		fn   func() error
	}{
		{"exec_echo", func() error { _, err := sb.Execute(ctx, "echo hi"); return err }},
		{"write_1k", func() error { return sb.Write(ctx, "bench/file.txt", oneK) }},
		{"read_1k", func() error { _, err := sb.Read(ctx, "bench/file.txt"); return err }},
		{"edit", func() error {
			_, err := sb.Edit(ctx, "bench/file.txt", "marker-A", "marker-B", false)
			if err == nil {
				_, err = sb.Edit(ctx, "bench/file.txt", "marker-B", "marker-A", false)
			}
			return err
		}},
		{"ls", func() error { _, err := sb.Ls(ctx, "bench"); return err }},
		{"grep", func() error { _, err := sb.Grep(ctx, "abcdef", "bench"); return err }},
		{"glob", func() error { _, err := sb.Glob(ctx, "*.txt", sb.WorkingDir()); return err }},
		{"upload_1k", func() error { return upload(ctx, sb, "bench/up1k", oneK) }},
		{"download_1k", func() error { return download(ctx, sb, "bench/up1k", len(oneK)) }},
		{"upload_32m", func() error { return upload(ctx, sb, "bench/up32m", big) }},
		{"download_32m", func() error { return download(ctx, sb, "bench/up32m", len(big)) }},
	}
	s := samples{}
	if shared {
		ops = append(ops, struct {
			name string
			fn   func() error
		}{"raw_exec", func() error { return b.rawExec(ctx, sb.ID()) }})
	}
	for _, op := range ops {
		for range b.n {
			if err := s.time(op.name, op.fn); err != nil {
				return nil, err
			}
		}
	}
	// The edit op does two edits (there and back): report one.
	m := s.medians()
	m["edit"] /= 2
	return m, nil
}

// lifecycle times create (New and the first command's answer: on
// Kubernetes, from the pod's creation to the first command), close and a
// warm pool's acquire; on Docker also raw_create, the engine's own create
// and start (see rawCreate), alternated with create.
func (b *bench) lifecycle(ctx context.Context) (map[string]float64, error) {
	s := samples{}
	for range b.n {
		if b.docker() {
			var id string
			err := s.time("raw_create", func() (err error) { id, err = b.rawCreate(ctx); return err })
			if id != "" {
				_, _ = b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
			}
			if err != nil {
				return nil, err
			}
		}
		var sb *sandbox.Sandbox
		if err := s.time("create", func() (err error) {
			if sb, err = sandbox.New(ctx, b.opts...); err != nil {
				return err
			}
			if _, err = sb.Execute(ctx, "true"); err != nil {
				sb.Close()
			}
			return err
		}); err != nil {
			return nil, err
		}
		if err := s.time("close", sb.Close); err != nil {
			return nil, err
		}
	}
	pool, err := sandbox.NewPool(ctx, sandbox.PoolSize(b.n), sandbox.PoolSandboxOptions(b.opts...))
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	for pool.Ready() < b.n {
		if err := pool.Err(); err != nil {
			return nil, err
		}
		sleep(ctx)
	}
	var got []*sandbox.Sandbox
	for range b.n {
		if err := s.time("pool_acquire", func() error {
			sb, err := pool.Get(ctx)
			got = append(got, sb)
			return err
		}); err != nil {
			return nil, err
		}
	}
	for _, sb := range got {
		sb.Close()
	}
	return s.medians(), nil
}

// dockerCP times `docker cp` of a 32 MiB file into and out of a sandbox.
func (b *bench) dockerCP(ctx context.Context) (map[string]float64, error) {
	if !b.docker() {
		return nil, fmt.Errorf("not on the Docker engine")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(ctx, b.opts...)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	dir, err := os.MkdirTemp("", "sandbox-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "up32m")
	if err := os.WriteFile(src, bytes.Repeat([]byte("x"), 32<<20), 0o644); err != nil {
		return nil, err
	}
	s := samples{}
	for range b.n {
		if err := s.time("docker_cp_upload_32m", func() error {
			return exec.CommandContext(ctx, docker, "cp", src, sb.ID()+":/tmp/up32m").Run()
		}); err != nil {
			return nil, err
		}
		if err := s.time("docker_cp_download_32m", func() error {
			return exec.CommandContext(ctx, docker, "cp", sb.ID()+":/tmp/up32m", filepath.Join(dir, "down32m")).Run()
		}); err != nil {
			return nil, err
		}
	}
	return s.medians(), nil
}

// rawExec runs `true` with one plain exec of the engine, as a baseline:
// on Docker an SDK exec, on another engine its own Exec (on Kubernetes a
// remotecommand exec through the API server).
func (b *bench) rawExec(ctx context.Context, id string) error {
	if !b.docker() {
		return engineExec(ctx, b.eng, id, io.Discard, "true")
	}
	return dockerExec(ctx, b.cli, id)
}

// rawCreate creates and starts a container of the bench's image running
// a long sleep, through the SDK with the engine's defaults (its network,
// its log driver), and returns once the start returned: what the Python
// library's create is (docker-py's containers.run of `tail -f`, detached).
func (b *bench) rawCreate(ctx context.Context) (string, error) {
	res, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: b.image, Cmd: []string{"sleep", "2147483647"}, Labels: map[string]string{sandbox.LabelSandbox: "bench-raw"}},
	})
	if err != nil {
		return "", err
	}
	_, err = b.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{})
	return res.ID, err
}

// dockerExec runs `true` with one plain Docker exec.
func dockerExec(ctx context.Context, cli *client.Client, id string) error {
	ex, err := cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	att, err := cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer att.Close()
	_, err = io.Copy(io.Discard, att.Reader)
	return err
}

func upload(ctx context.Context, sb *sandbox.Sandbox, p string, content []byte) error {
	res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: p, Content: content}})
	if err == nil {
		err = res[0].Err
	}
	return err
}

func download(ctx context.Context, sb *sandbox.Sandbox, p string, size int) error {
	res, err := sb.DownloadFiles(ctx, []string{p})
	if err == nil {
		err = res[0].Err
	}
	if err == nil && len(res[0].Content) != size {
		err = fmt.Errorf("downloaded %d bytes, want %d", len(res[0].Content), size)
	}
	return err
}
