package helper

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// session runs Serve in once mode and returns its frame ends.
func session(t *testing.T) (*proto.Writer, *proto.Reader, func()) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(inR, outW, true)
		outW.Close()
	}()
	fr := proto.NewReader(outR)
	f, err := fr.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, proto.KindHello, f.Kind)
	var h proto.Hello
	require.NoError(t, json.Unmarshal(f.Payload, &h))
	require.Equal(t, proto.Version, h.Version)
	require.Equal(t, proto.Capabilities(), h.Caps, "the helper announces every capability")
	require.True(t, h.TTY, "and says TTY for the libraries that predate Caps")
	return proto.NewWriter(inW), fr, func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	}
}

// roundTrip sends req and collects output until the result.
func roundTrip(t *testing.T, w *proto.Writer, r *proto.Reader, req proto.Request, input []byte) (string, proto.Result) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	require.NoError(t, w.WriteFrame(proto.KindRequest, 1, body))
	if input != nil {
		require.NoError(t, w.WriteFrame(proto.KindInput, 1, input))
		require.NoError(t, w.WriteFrame(proto.KindInput, 1, nil))
	}
	return readResult(t, r)
}

func TestExecCombined(t *testing.T) {
	w, r, stop := session(t)
	defer stop()
	out, res := roundTrip(t, w, r, proto.Request{Op: proto.OpExec, Command: "echo a; echo b >&2; exit 3", Combined: true}, nil)
	assert.Equal(t, "a\nb\n", out)
	assert.Equal(t, 3, res.ExitCode)
}

func TestExecStdin(t *testing.T) {
	w, r, stop := session(t)
	defer stop()
	out, res := roundTrip(t, w, r, proto.Request{Op: proto.OpExec, Command: "tr a-z A-Z", Combined: true, Stdin: true}, []byte("shout"))
	assert.Equal(t, "SHOUT", out)
	assert.Equal(t, 0, res.ExitCode)
}

// alive reports whether a process whose command line contains marker runs.
func alive(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, _ := os.ReadFile(d)
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), marker) {
			return true
		}
	}
	return false
}

func TestExecTimeoutKillsTree(t *testing.T) {
	w, r, stop := session(t)
	defer stop()
	start := time.Now()
	cmd := "sleep 61.25 & (sleep 62.25 &); setsid sleep 63.25 & echo up; sleep 64.25"
	out, res := roundTrip(t, w, r, proto.Request{Op: proto.OpExec, Command: cmd, Combined: true, Timeout: 300}, nil)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, "up\n", out)
	assert.True(t, res.TimedOut)
	assert.Equal(t, proto.TimeoutExitCode, res.ExitCode)
	for _, m := range []string{"sleep 61.25", "sleep 62.25", "sleep 63.25", "sleep 64.25"} {
		assert.False(t, alive(m), m)
	}
}

func TestExecCancelOnDisconnect(t *testing.T) {
	w, r, stop := session(t)
	body, _ := json.Marshal(proto.Request{Op: proto.OpExec, Command: "sleep 65.25", Combined: true})
	require.NoError(t, w.WriteFrame(proto.KindRequest, 1, body))
	require.Eventually(t, func() bool { return alive("sleep 65.25") }, 5*time.Second, 10*time.Millisecond)
	go func() { // nobody reads the answer; keep the pipe moving
		for {
			if _, err := r.ReadFrame(); err != nil {
				return
			}
		}
	}()
	stop() // the library goes away
	assert.False(t, alive("sleep 65.25"))
}

func TestFileOps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.txt")
	w, r, stop := session(t)
	_, res := roundTrip(t, w, r, proto.Request{Op: proto.OpWrite, Path: p}, []byte("hello\r\nworld"))
	stop()
	require.Nil(t, res.Error)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "hello\r\nworld", string(got))

	w, r, stop = session(t)
	_, res = roundTrip(t, w, r, proto.Request{Op: proto.OpEdit, Path: p, Old: "hello\nworld", New: "bye\nall"}, nil)
	stop()
	require.Nil(t, res.Error)
	assert.Equal(t, 1, res.Count)
	got, _ = os.ReadFile(p)
	assert.Equal(t, "bye\r\nall", string(got))

	w, r, stop = session(t)
	_, res = roundTrip(t, w, r, proto.Request{Op: proto.OpRead, Path: filepath.Join(dir, "missing")}, nil)
	stop()
	require.NotNil(t, res.Error)
	assert.Equal(t, proto.CodeNotFound, res.Error.Code)
}

func TestKillSession(t *testing.T) {
	// A stand-in for a helper: a session leader whose commands run in
	// process groups of their own (job control), one of them finished but
	// for a background process.
	helper := exec.Command("bash", "-c", "set -m; sleep 300 & sleep 301 & (sleep 302 &); wait")
	helper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, helper.Start())
	waited := make(chan error, 1)
	go func() { waited <- helper.Wait() }()
	sid := helper.Process.Pid
	find := func(cmdline string) int {
		for _, p := range tree(sid) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.ReplaceAll(string(b), "\x00", " ") == cmdline+" " {
				return p
			}
		}
		return 0
	}
	var running []int
	require.Eventually(t, func() bool {
		running = []int{find("sleep 300"), find("sleep 301")}
		return running[0] != 0 && running[1] != 0
	}, 10*time.Second, 10*time.Millisecond)
	var background int
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, _ := strconv.Atoi(e.Name())
			if b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); string(b) == "sleep\x00302\x00" {
				if st, ok := readStat(pid); ok && st.session == sid {
					background = pid
				}
			}
		}
		return background != 0
	}, 10*time.Second, 10*time.Millisecond)
	defer syscall.Kill(background, syscall.SIGKILL)

	_, res := oneRequest(t, proto.Request{Op: proto.OpKill, Session: sid})
	require.Nil(t, res.Error)
	for _, p := range running {
		assert.True(t, dead(p), "command %d survived", p)
	}
	select {
	case <-waited: // the helper ends too (killed, or its commands gone)
	case <-time.After(10 * time.Second):
		t.Error("the helper survived")
	}
	assert.False(t, dead(background), "a finished command's background process was killed")

	// Gone by now: not an error.
	_, res = oneRequest(t, proto.Request{Op: proto.OpKill, Session: sid})
	assert.Nil(t, res.Error)
}

// oneRequest runs req on a helper of its own.
func oneRequest(t *testing.T, req proto.Request) (string, proto.Result) {
	t.Helper()
	w, r, stop := session(t)
	defer stop()
	return roundTrip(t, w, r, req, nil)
}

// readResult collects output frames until the result.
func readResult(t *testing.T, r *proto.Reader) (string, proto.Result) {
	t.Helper()
	var out strings.Builder
	for {
		f, err := r.ReadFrame()
		require.NoError(t, err)
		switch f.Kind {
		case proto.KindStdout, proto.KindStderr:
			out.Write(f.Payload)
		case proto.KindResult:
			var res proto.Result
			require.NoError(t, json.Unmarshal(f.Payload, &res))
			return out.String(), res
		}
	}
}

func TestAliveWhileBusy(t *testing.T) {
	w, r, stop := session(t)
	defer stop()
	body, err := json.Marshal(proto.Request{Op: proto.OpExec, Command: "sleep 2.5"})
	require.NoError(t, err)
	require.NoError(t, w.WriteFrame(proto.KindRequest, 1, body))
	alive := 0
	for {
		f, err := r.ReadFrame()
		require.NoError(t, err)
		if f.Kind == proto.KindAlive {
			assert.Zero(t, f.ID)
			alive++
		}
		if f.Kind == proto.KindResult {
			break
		}
	}
	assert.GreaterOrEqual(t, alive, 1, "no alive frame in 2.5 s of work")
}
