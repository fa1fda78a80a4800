package helper

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ttyScreen reads output frames of request 1 into a screen until want
// appears in it (or the result comes, or 20 s pass).
type ttyScreen struct {
	t      *testing.T
	r      *proto.Reader
	frames chan proto.Frame
	out    strings.Builder
	res    *proto.Result
}

func newTTYScreen(t *testing.T, r *proto.Reader) *ttyScreen {
	s := &ttyScreen{t: t, r: r, frames: make(chan proto.Frame, 64)}
	go func() {
		defer close(s.frames)
		for {
			f, err := r.ReadFrame()
			if err != nil {
				return
			}
			if f.Kind == proto.KindStdout || f.Kind == proto.KindStderr {
				f.Payload = append([]byte(nil), f.Payload...)
			}
			s.frames <- f
		}
	}()
	return s
}

// until waits for want in the output after from; it returns the index past it.
func (s *ttyScreen) until(from int, want string) int {
	s.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if i := strings.Index(s.out.String()[from:], want); i >= 0 {
			return from + i + len(want)
		}
		select {
		case f, ok := <-s.frames:
			if !ok {
				s.t.Fatalf("the session ended before %q; output %q", want, s.out.String())
			}
			switch f.Kind {
			case proto.KindStdout, proto.KindStderr:
				s.out.Write(f.Payload)
			case proto.KindResult:
				var res proto.Result
				require.NoError(s.t, json.Unmarshal(f.Payload, &res))
				s.res = &res
				if !strings.Contains(s.out.String()[from:], want) {
					s.t.Fatalf("the command ended before %q; output %q, result %+v", want, s.out.String(), res)
				}
			}
		case <-deadline:
			s.t.Fatalf("no %q in 20 s; output %q", want, s.out.String())
		}
	}
}

// result waits for the result.
func (s *ttyScreen) result() proto.Result {
	s.t.Helper()
	deadline := time.After(20 * time.Second)
	for s.res == nil {
		select {
		case f, ok := <-s.frames:
			if !ok {
				s.t.Fatalf("the session ended without a result; output %q", s.out.String())
			}
			if f.Kind == proto.KindResult {
				var res proto.Result
				require.NoError(s.t, json.Unmarshal(f.Payload, &res))
				s.res = &res
			} else if f.Kind == proto.KindStdout {
				s.out.Write(f.Payload)
			}
		case <-deadline:
			s.t.Fatalf("no result in 20 s; output %q", s.out.String())
		}
	}
	return *s.res
}

// TestExecTTYShell drives sh on a terminal through the helper: the size
// asked, a resize, Ctrl-C interrupting a running command, the exit status.
func TestExecTTYShell(t *testing.T) {
	w, r, stop := session(t)
	defer stop()
	body, err := json.Marshal(proto.Request{Op: proto.OpExec, Command: "PS1='$ ' exec sh", Stdin: true, TTY: &proto.Winsize{Rows: 30, Cols: 90}})
	require.NoError(t, err)
	require.NoError(t, w.WriteFrame(proto.KindRequest, 1, body))
	s := newTTYScreen(t, r)
	type_ := func(text string) { require.NoError(t, w.WriteFrame(proto.KindInput, 1, []byte(text))) }

	type_("stty size; [ -t 0 ] && echo is-a-tty\r")
	at := s.until(0, "30 90")
	at = s.until(at, "is-a-tty")
	require.NoError(t, w.WriteFrame(proto.KindResize, 1, proto.EncodeWinsize(proto.Winsize{Rows: 41, Cols: 123})))
	type_("stty size\r")
	at = s.until(at, "41 123")
	start := time.Now()
	type_("sleep 30; echo not-$((1+1))-interrupted\r")
	time.Sleep(300 * time.Millisecond)
	type_("\x03")
	type_("echo after-$((6*7))\r")
	s.until(at, "after-42")
	type_("exit 7\r")
	res := s.result()
	assert.Equal(t, 7, res.ExitCode)
	assert.NotContains(t, s.out.String(), "not-2-interrupted")
	assert.Less(t, time.Since(start), 20*time.Second, "Ctrl-C did not end the sleep")
}
