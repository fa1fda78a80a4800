package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditLog is a JSON audit handler's output, parsed record by record.
type auditLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *auditLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *auditLog) handler() slog.Handler { return slog.NewJSONHandler(l, nil) }

// records returns the records so far.
func (l *auditLog) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(l.buf.String()) {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		out = append(out, r)
	}
	return out
}

// TestAudit: one record per call, in order, with its sandbox, outcome,
// exit code, bytes and path; commands left out by default; a failed call
// at WARN with its error.
func TestAudit(t *testing.T) {
	var log auditLog
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithAudit(log.handler()))
	ctx := testCtx(t)

	res, err := sb.Execute(ctx, "echo hi; exit 3")
	require.NoError(t, err)
	require.Equal(t, 3, res.ExitCode)
	require.NoError(t, sb.Write(ctx, "a.txt", []byte("hello")))
	_, err = sb.Read(ctx, "a.txt")
	require.NoError(t, err)
	_, err = sb.Edit(ctx, "a.txt", "hello", "bye", false)
	require.NoError(t, err)
	_, err = sb.Ls(ctx, ".")
	require.NoError(t, err)
	_, err = sb.Stat(ctx, "a.txt")
	require.NoError(t, err)
	_, err = sb.Glob(ctx, "*.txt", ".")
	require.NoError(t, err)
	_, err = sb.Grep(ctx, "bye", ".")
	require.NoError(t, err)
	_, err = sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: "b.txt", Content: []byte("12345678")}})
	require.NoError(t, err)
	_, err = sb.DownloadFiles(ctx, []string{"b.txt"})
	require.NoError(t, err)
	fsName := strings.TrimPrefix(path.Join(sb.WorkingDir(), "b.txt"), "/")
	_, err = fs.ReadFile(sb.FS(ctx), fsName)
	require.NoError(t, err)
	var exit *sandbox.ExitError
	require.ErrorAs(t, sb.Command(ctx, "exit 2").Run(), &exit)
	p, err := sb.StartProcess(ctx, "echo out")
	require.NoError(t, err)
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	_, err = p.Read(ctx, 0)
	require.NoError(t, err)
	_, err = sb.Read(ctx, "missing.txt")
	require.ErrorIs(t, err, fs.ErrNotExist)
	var tarball bytes.Buffer
	require.NoError(t, sb.Persist(ctx, &tarball, "a.txt"))
	persisted := tarball.Len()
	require.NoError(t, sb.Hydrate(ctx, &tarball))
	require.NoError(t, sb.Delete(ctx, "a.txt"))
	require.NoError(t, sb.Close())

	recs := log.records(t)
	var ops []string
	for _, r := range recs {
		ops = append(ops, r["op"].(string))
	}
	require.Equal(t, []string{"New", "Execute", "Write", "Read", "Edit", "Ls", "Stat", "Glob", "Grep",
		"UploadFiles", "DownloadFiles", "FS.ReadFile", "Command", "StartProcess", "Process.Wait", "Process.Read",
		"Read", "Persist", "Hydrate", "Delete", "Close"}, ops)
	for _, r := range recs {
		assert.Equal(t, sb.ID(), r["sandbox"], r)
		assert.Equal(t, "sandbox "+r["op"].(string), r["msg"], r)
		assert.NotContains(t, r, "command", "commands are left out by default: %v", r)
		assert.Greater(t, r["duration"], 0.0, r)
		if r["outcome"] == "ok" {
			assert.Equal(t, "INFO", r["level"], r)
			assert.NotContains(t, r, "error", r)
		}
	}
	at := func(i int) map[string]any { return recs[i] }
	assert.Equal(t, 3.0, at(1)["exit_code"])
	assert.Equal(t, 3.0, at(1)["bytes"]) // "hi\n"
	assert.Equal(t, "a.txt", at(2)["path"])
	assert.Equal(t, 5.0, at(2)["bytes"])
	assert.Equal(t, 8.0, at(9)["bytes"])
	assert.Equal(t, 8.0, at(10)["bytes"])
	assert.Equal(t, fsName, at(11)["path"])
	assert.Equal(t, 8.0, at(11)["bytes"])
	assert.Equal(t, "ok", at(12)["outcome"], "an exit status other than 0 is the command's outcome, not the call's")
	assert.Equal(t, 2.0, at(12)["exit_code"])
	assert.Equal(t, 0.0, at(14)["exit_code"])
	assert.Equal(t, 4.0, at(15)["bytes"]) // "out\n"
	failed := at(16)
	assert.Equal(t, "error", failed["outcome"])
	assert.Equal(t, "WARN", failed["level"])
	assert.Contains(t, failed["error"], "missing.txt")
	assert.Equal(t, float64(persisted), at(17)["bytes"])
	assert.Equal(t, float64(persisted), at(18)["bytes"])
}

// TestAuditRedact: a Redact decides what a record says of commands and
// paths; "" leaves the attribute out.
func TestAuditRedact(t *testing.T) {
	var log auditLog
	redact := func(kind, text string) string {
		if strings.Contains(text, "secret") {
			return ""
		}
		return strings.ReplaceAll(text, "token-123", "[token]")
	}
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithAudit(log.handler()), sandbox.WithRedact(redact))
	ctx := testCtx(t)
	_, err := sb.Execute(ctx, "echo token-123")
	require.NoError(t, err)
	require.NoError(t, sb.Write(ctx, "secret.txt", []byte("x")))
	require.NoError(t, sb.Write(ctx, "plain.txt", []byte("x")))
	recs := log.records(t)
	require.Len(t, recs, 4)
	assert.Equal(t, "echo [token]", recs[1]["command"])
	assert.NotContains(t, recs[2], "path")
	assert.Equal(t, "plain.txt", recs[3]["path"])
}

// TestAuditOptions: the options refuse nil and apply to New and Attach only.
func TestAuditOptions(t *testing.T) {
	for _, opt := range []sandbox.Option{sandbox.WithAudit(nil), sandbox.WithTracerProvider(nil), sandbox.WithRedact(nil)} {
		_, err := sandbox.New(testCtx(t), opt)
		assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
	}
	_, err := sandbox.List(testCtx(t), sandbox.Filter{}, onEngine(sandbox.WithAudit(slog.DiscardHandler))...)
	assert.ErrorIs(t, err, sandbox.ErrInvalidOption)
}

// auditCheck checks audit records against what the calls were.
type auditCheck struct {
	t    *testing.T
	id   string // the sandbox's ID
	recs []map[string]any
}

// ops returns the records' ops.
func (c auditCheck) ops() []string {
	var out []string
	for _, r := range c.recs {
		out = append(out, r["op"].(string))
	}
	return out
}

// at returns the i-th record after checking its op, sandbox, outcome,
// level, message and duration, and that it holds no command.
func (c auditCheck) at(i int, op, outcome string) map[string]any {
	c.t.Helper()
	r := c.recs[i]
	assert.Equal(c.t, op, r["op"], "record %d: %v", i, r)
	assert.Equal(c.t, c.id, r["sandbox"], r)
	assert.Equal(c.t, "sandbox "+op, r["msg"], r)
	assert.Equal(c.t, outcome, r["outcome"], r)
	assert.Equal(c.t, map[string]string{"ok": "INFO", "error": "WARN"}[outcome], r["level"], r)
	if outcome == "ok" {
		assert.NotContains(c.t, r, "error", r)
	} else {
		assert.NotEmpty(c.t, r["error"], r)
	}
	assert.NotContains(c.t, r, "command", r)
	assert.Greater(c.t, r["duration"], 0.0, r)
	return r
}

// echoed sends msg on c, connected to an echo server, requires it back,
// and closes c.
func echoed(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Minute)))
	_, err := io.WriteString(c, msg)
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
}

// TestAuditPortsProcesses: one record per call of the ports (Dial, Forward
// and the Dial of each connection it carries, Forwarder.Close), of the
// processes (Processes, Process, Process.Info, Resize, Signal, Kill, Wait,
// Cmd.Resize), Watch and Watcher.Close, Detach and Attach, with the address, port, process
// ID and signal, and an error's outcome.
func TestAuditPortsProcesses(t *testing.T) {
	t.Parallel()
	var log auditLog
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithAudit(log.handler()))
	ctx := testCtx(t)
	srv, err := sb.StartProcess(ctx, "exec nc -ll -p 7000 -e cat")
	require.NoError(t, err)
	for {
		conn, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000")
		if err == nil {
			conn.Close()
			break
		}
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		select {
		case <-ctx.Done():
			t.Fatalf("the echo server did not start: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	mark := len(log.records(t))

	conn, err := sb.Dial(ctx, "tcp", "127.0.0.1:7000")
	require.NoError(t, err)
	echoed(t, conn, "hi\n")
	_, err = sb.Dial(ctx, "tcp", "127.0.0.1:1")
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	fwd, err := sb.Forward(ctx, "", 7000)
	require.NoError(t, err)
	conn, err = net.Dial("tcp", fwd.Addr().String())
	require.NoError(t, err)
	echoed(t, conn, "through\n")
	require.NoError(t, fwd.Close())
	<-fwd.Done() // the forwarded connection's Dial has ended
	_, err = sb.Processes(ctx)
	require.NoError(t, err)
	again, err := sb.Process(ctx, srv.ID())
	require.NoError(t, err)
	_, err = again.Info(ctx)
	require.NoError(t, err)
	tty, err := sb.StartProcess(ctx, "exec sleep 1000", sandbox.ProcessTTY(24, 80))
	require.NoError(t, err)
	require.NoError(t, tty.Resize(ctx, 30, 100))
	require.NoError(t, tty.Signal(ctx, syscall.SIGCONT))
	require.NoError(t, tty.Kill(ctx))
	info, err := tty.Wait(ctx)
	require.NoError(t, err)
	_, err = sb.Process(ctx, "no-such-process")
	require.ErrorIs(t, err, sandbox.ErrProcessNotFound)
	cctx, cancel := context.WithCancel(ctx)
	cmd := sb.Command(cctx, "exec sleep 1000")
	cmd.TTY = &sandbox.Winsize{Rows: 24, Cols: 80}
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Resize(ctx, 30, 100))
	cancel()
	require.Error(t, cmd.Wait())
	w, err := sb.Watch(ctx, ".", false)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	sb.Detach()
	other, err := sandbox.Attach(ctx, sb.ID(), onEngine(sandbox.WithAudit(log.handler()))...)
	require.NoError(t, err)
	require.NoError(t, other.Close())

	c := auditCheck{t: t, id: sb.ID(), recs: log.records(t)[mark:]}
	require.Equal(t, []string{"Dial", "Dial", "Forward", "Dial", "Forwarder.Close", "Processes", "Process",
		"Process.Info", "StartProcess", "Process.Resize", "Process.Signal", "Process.Kill", "Process.Wait",
		"Process", "Cmd.Resize", "Command", "Watch", "Watcher.Close", "Detach", "Attach", "Close"}, c.ops())
	assert.Equal(t, "tcp 127.0.0.1:7000", c.at(0, "Dial", "ok")["address"])
	refused := c.at(1, "Dial", "error")
	assert.Equal(t, "tcp 127.0.0.1:1", refused["address"])
	assert.Contains(t, refused["error"], "refused")
	r := c.at(2, "Forward", "ok")
	assert.Equal(t, fwd.Addr().String(), r["address"])
	assert.Equal(t, 7000.0, r["port"])
	assert.Equal(t, "tcp 127.0.0.1:7000", c.at(3, "Dial", "ok")["address"], "the forwarded connection")
	assert.Equal(t, fwd.Addr().String(), c.at(4, "Forwarder.Close", "ok")["address"])
	c.at(5, "Processes", "ok")
	for i, op := range map[int]string{6: "Process", 7: "Process.Info"} {
		assert.Equal(t, srv.ID(), c.at(i, op, "ok")["process"])
	}
	for i, op := range map[int]string{8: "StartProcess", 9: "Process.Resize", 10: "Process.Signal", 11: "Process.Kill", 12: "Process.Wait"} {
		assert.Equal(t, tty.ID(), c.at(i, op, "ok")["process"])
	}
	assert.Equal(t, float64(syscall.SIGCONT), c.recs[10]["signal"])
	assert.Equal(t, float64(info.ExitCode), c.recs[12]["exit_code"])
	assert.Equal(t, 137.0, c.recs[12]["exit_code"])
	assert.Equal(t, "no-such-process", c.at(13, "Process", "error")["process"])
	c.at(14, "Cmd.Resize", "ok")
	c.at(15, "Command", "error") // its context was cancelled
	assert.Equal(t, ".", c.at(16, "Watch", "ok")["path"])
	assert.Equal(t, ".", c.at(17, "Watcher.Close", "ok")["path"])
	c.at(18, "Detach", "ok")
	c.at(19, "Attach", "ok")
	c.at(20, "Close", "ok")
}

// TestAuditSnapshots: one record per call of Usage, Pause, Resume,
// Snapshot, Snapshot.Fork and Snapshot.Remove (the last two on the
// sandbox the snapshot was taken of), with the snapshot's ID and the fork
// count; a failed Remove's and Fork's outcome.
func TestAuditSnapshots(t *testing.T) {
	testenv.RequireDocker(t, "snapshots are Docker images; Usage and Pause are Docker's and Podman's")
	t.Parallel()
	var log auditLog
	labels := map[string]string{"audittest": t.Name()}
	pruneSnapshotsByLabel(t, labels)
	sb := newSandbox(t, testenv.BusyboxImage, sandbox.WithAudit(log.handler()))
	ctx := testCtx(t)

	_, err := sb.Usage(ctx)
	require.NoError(t, err)
	require.NoError(t, sb.Pause(ctx))
	require.NoError(t, sb.Resume(ctx))
	snap, err := sb.Snapshot(ctx, sandbox.SnapshotLabels(labels))
	require.NoError(t, err)
	forks, err := snap.Fork(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, forks[0].Close())
	gone, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, snap.Remove(gone))
	require.NoError(t, snap.Remove(ctx))
	_, err = snap.Fork(ctx, 0)
	require.ErrorIs(t, err, sandbox.ErrInvalidOption)

	c := auditCheck{t: t, id: sb.ID(), recs: log.records(t)}
	require.Equal(t, []string{"New", "Usage", "Pause", "Resume", "Snapshot", "Snapshot.Fork", "Snapshot.Remove",
		"Snapshot.Remove", "Snapshot.Fork"}, c.ops(), "a fork without WithAudit is not recorded")
	for i, op := range []string{"Usage", "Pause", "Resume"} {
		c.at(i+1, op, "ok")
	}
	short := strings.TrimPrefix(snap.ID, "sha256:")[:12]
	assert.Equal(t, short, c.at(4, "Snapshot", "ok")["snapshot"])
	r := c.at(5, "Snapshot.Fork", "ok")
	assert.Equal(t, short, r["snapshot"])
	assert.Equal(t, 1.0, r["count"])
	assert.Equal(t, short, c.at(6, "Snapshot.Remove", "error")["snapshot"])
	assert.Equal(t, short, c.at(7, "Snapshot.Remove", "ok")["snapshot"])
	assert.Equal(t, 0.0, c.at(8, "Snapshot.Fork", "error")["count"])
}
