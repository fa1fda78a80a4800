package integration

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"sync"
	"testing"

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
