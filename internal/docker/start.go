package docker

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/moby/moby/client"
)

// readyWait bounds how long a start waits for the helper's ready line.
const readyWait = 10 * time.Second

// maxReadyBytes bounds what a start reads of PID 1's output for its ready
// line (it is the first thing PID 1 writes; the container can write more
// to /proc/1/fd/1, so the bound is on what is read, not kept).
const maxReadyBytes = 64 << 10

// start starts the container and returns once its helper (PID 1) wrote
// proto.ReadyLine: it handles the engine's stop signal from then on, so a
// Close or Stop right after New or a restart ends it cleanly (status 0;
// before, a stop that came first ended it with the Go runtime's status 2,
// or was dropped and the engine killed it after the grace period). The
// wait reads PID 1's standard output through an attach made before the
// start; it is best effort: a failed attach, an output that ends or never
// says it (a helper that died starting), or readyWait (or ctx) ending lets
// start return as it did without it, with the start's own error only.
// A container that boots (boot.go) is the exception: its output ending
// without the line is a boot that failed, and start fails with what PID 1
// wrote.
func (d *Engine) start(ctx context.Context, id string, boot bool) error {
	att, aerr := d.Client.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true})
	if aerr == nil {
		defer att.Close()
	}
	if _, err := d.Client.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return Classify(err)
	}
	if aerr == nil {
		r := awaitReady(ctx, &att.HijackedResponse)
		if boot && r.ended && !r.ready {
			return fmt.Errorf("the helper did not start: %q", bytes.TrimSpace(plainOutput(r.head)))
		}
	}
	return nil
}

// readiness is what awaitReady saw: the ready line, or the output's end
// (not a bound's), and the output's first bytes.
type readiness struct {
	ready, ended bool
	head         []byte // at most maxHeadBytes
}

// maxHeadBytes bounds the output kept to say why a boot failed.
const maxHeadBytes = 1024

// awaitReady reads att until proto.ReadyLine, its end, maxReadyBytes,
// readyWait or ctx's end. The stream may be multiplexed (8-byte frame
// headers) or raw: the line is looked for in the bytes as they come.
func awaitReady(ctx context.Context, att *client.HijackedResponse) readiness {
	var bounded atomic.Bool
	cut := func() { bounded.Store(true); att.Conn.Close() }
	stop := context.AfterFunc(ctx, cut)
	defer stop()
	t := time.AfterFunc(readyWait, cut)
	defer t.Stop()
	line := []byte(proto.ReadyLine)
	var r readiness
	var seen []byte // the last bytes read, enough to hold the line
	buf := make([]byte, 4096)
	for read := 0; read < maxReadyBytes; {
		n, err := att.Reader.Read(buf)
		read += n
		if len(r.head) < maxHeadBytes {
			r.head = append(r.head, buf[:min(n, maxHeadBytes-len(r.head))]...)
		}
		seen = append(seen, buf[:n]...)
		if bytes.Contains(seen, line) {
			r.ready = true
			return r
		}
		if err != nil {
			r.ended = !bounded.Load()
			return r
		}
		if len(seen) > len(line) {
			seen = append(seen[:0], seen[len(seen)-len(line):]...)
		}
	}
	return r
}
