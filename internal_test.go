package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The library retries, on an exec of its own, exactly the operations that
// the table of operations says are safe to run twice: read, ls, glob,
// grep, stat and prepare.
func TestRetrySafeIsTheTables(t *testing.T) {
	var retried []string
	for _, s := range proto.Ops() {
		assert.Equal(t, s.RetrySafe, retrySafe(s.Op), s.Op)
		if retrySafe(s.Op) {
			retried = append(retried, s.Op)
		}
	}
	assert.ElementsMatch(t, []string{proto.OpRead, proto.OpLs, proto.OpGlob, proto.OpGrep, proto.OpStat, proto.OpPrepare}, retried)
	assert.False(t, retrySafe("no such op"))
}

// As os/exec's TestPrefixSuffixSaver: the first and last N bytes, and how
// many were left out between them.
func TestPrefixSuffixSaver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		N      int
		writes []string
		want   string
	}{
		{N: 2, writes: nil, want: ""},
		{N: 2, writes: []string{"a"}, want: "a"},
		{N: 2, writes: []string{"abc", "d"}, want: "abcd"},
		{N: 2, writes: []string{"abc", "d", "e"}, want: "ab\n... omitting 1 bytes ...\nde"},
		{N: 2, writes: []string{"ab______________________yz"}, want: "ab\n... omitting 22 bytes ...\nyz"},
		{N: 2, writes: []string{"ab_______________________y", "z"}, want: "ab\n... omitting 23 bytes ...\nyz"},
	}
	for i, tt := range tests {
		w := &prefixSuffixSaver{N: tt.N}
		for _, s := range tt.writes {
			n, err := w.Write([]byte(s))
			if n != len(s) || err != nil {
				t.Fatalf("%d. Write(%q) = %v, %v; want %v, nil", i, s, n, err, len(s))
			}
		}
		if got := string(w.Bytes()); got != tt.want {
			t.Errorf("%d. Bytes = %q; want %q", i, got, tt.want)
		}
	}
}

// A limitBuffer keeps up to max bytes and refuses more with ErrTooLarge.
func TestLimitBuffer(t *testing.T) {
	t.Parallel()
	w := &limitBuffer{max: 5}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("def")); err == nil || !strings.Contains(err.Error(), "over 5 bytes") {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if w.buf.String() != "abc" {
		t.Fatalf("kept %q", w.buf.String())
	}
}

// New's sweep removes a port socket directory whose socket is dead (its
// program was killed: the socket file stays, nothing listens), once it is
// a minute old, unless a container names it; it leaves alone a live one, a
// young one, a detached sandbox's (no socket), one holding anything else,
// and a directory of another name.
func TestSweepPortDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := time.Now().Add(-2 * portDirMinAge)
	mk := func(name string, socket, dead bool, mtime time.Time) string {
		dir := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "s"), 0o755))
		if !socket {
			return dir
		}
		sock := filepath.Join(dir, "s", "ports.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		require.NoError(t, err)
		if dead { // as SIGKILL leaves it: the file, no listener
			l.SetUnlinkOnClose(false)
			require.NoError(t, l.Close())
		} else {
			t.Cleanup(func() { l.Close() })
		}
		require.NoError(t, os.Chtimes(sock, mtime, mtime))
		return dir
	}
	dead := mk("dockersandbox-1", true, true, old)
	young := mk("dockersandbox-2", true, true, time.Now())
	live := mk("dockersandbox-3", true, false, old)
	named := mk("dockersandbox-4", true, true, old)
	detached := mk("dockersandbox-5", false, false, old)
	other := mk("dockersandbox-6", true, true, old)
	require.NoError(t, os.WriteFile(filepath.Join(other, "keep"), []byte("x"), 0o600))
	notOurs := mk("elsewhere-7", true, true, old)
	ps, err := newPortSocket() // a real one, as New makes it
	require.NoError(t, err)
	defer ps.close()
	sock := filepath.Join(ps.dir, "ports.sock")
	require.NoError(t, os.Chtimes(sock, old, old))

	sweepPortDirs([]engine.Info{{ID: "c", Labels: map[string]string{labelPortsDir: named}}})
	assert.NoDirExists(t, dead)
	for _, d := range []string{young, live, named, detached, other, notOurs, ps.parent} {
		assert.DirExists(t, d)
	}
	c, err := net.Dial("unix", sock)
	require.NoError(t, err, "the live socket still listens")
	c.Close()
}

// FuzzCapWriter feeds data to a capWriter in pieces cut at fuzzed points and
// checks what Execute would return: valid UTF-8, the whole output when it
// fits, else a prefix of at most max bytes followed by the truncation marker.
func FuzzCapWriter(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte{3, 1}, uint16(100))
	f.Add([]byte("hello\nworld\n"), []byte{3, 1}, uint16(5))
	f.Add([]byte("héllo"), []byte{2}, uint16(1))      // cap inside "é"
	f.Add([]byte("€€€€"), []byte{1, 1, 1}, uint16(3)) // cap after a whole "€"
	f.Add([]byte("a€b"), []byte{}, uint16(2))         // cap after the first byte of "€"
	f.Add([]byte("a😀b"), []byte{0, 2}, uint16(4))     // cap inside a 4-byte rune
	f.Add([]byte("\xff\xfe\xe2\x82"), []byte{1}, uint16(3))
	f.Add([]byte("ok\xe2\x82x"), []byte{}, uint16(4)) // cut at an invalid sequence
	f.Add([]byte(""), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data, cuts []byte, m uint16) {
		// max is positive (WithMaxOutputBytes refuses 0); reduce it so that
		// both short and truncated outputs are common.
		max := int(m)%(2*len(data)+2) + 1
		c := &capWriter{max: max}
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(int(cuts[i]), n)
			}
			nw, err := c.Write(rest[:n])
			if nw != n || err != nil {
				t.Fatalf("Write of %d bytes = %d, %v", n, nw, err)
			}
			rest = rest[n:]
			if len(c.buf) > max {
				t.Fatalf("kept %d bytes, max %d", len(c.buf), max)
			}
		}
		if c.total != int64(len(data)) {
			t.Fatalf("total %d, wrote %d", c.total, len(data))
		}

		out := c.String()
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 output %q", out)
		}
		if out != c.String() {
			t.Fatal("String is not repeatable")
		}
		if len(data) <= max {
			if c.truncated() {
				t.Fatalf("%d bytes with max %d reported truncated", len(data), max)
			}
			if want := strings.ToValidUTF8(string(data), "\uFFFD"); out != want {
				t.Fatalf("got %q, want %q", out, want)
			}
			return
		}
		if !c.truncated() {
			t.Fatalf("%d bytes with max %d not reported truncated", len(data), max)
		}
		marker := fmt.Sprintf("\n\n... Output truncated at %d bytes.", max)
		body, ok := strings.CutSuffix(out, marker)
		if !ok {
			t.Fatalf("output %q lacks the marker %q", out, marker)
		}
		// The body renders the first k bytes, where only a character cut by
		// the cap (at most 3 bytes) is dropped.
		k := len(trimPartialRune(data[:max]))
		if k > max || k < max-(utf8.UTFMax-1) {
			t.Fatalf("trimPartialRune kept %d of %d bytes", k, max)
		}
		if want := strings.ToValidUTF8(string(data[:k]), "\uFFFD"); body != want {
			t.Fatalf("body %q, want %q (k=%d)", body, want, k)
		}
		if k < max && utf8.FullRune(data[k:max]) {
			t.Fatalf("dropped the complete sequence %q", data[k:max])
		}
		// Valid input: the body is exactly the longest prefix of at most
		// max bytes that ends on a character boundary.
		if utf8.Valid(data) {
			want := max
			for want > 0 && !utf8.RuneStart(data[want]) {
				want--
			}
			if !bytes.Equal([]byte(body), data[:want]) {
				t.Fatalf("body %q, want the prefix %q", body, data[:want])
			}
		}
	})
}

func TestTrimPartialRune(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"a\xc3", "a"},             // first byte of "é"
		{"a\xe2\x82", "a"},         // two bytes of "€"
		{"a\xf0\x9f\x98", "a"},     // three bytes of "😀"
		{"a😀", "a😀"},               // complete 4-byte rune
		{"\xff", "\xff"},           // invalid, not a partial rune: kept
		{"a\x80\x80", "a\x80\x80"}, // stray continuation bytes: kept
	} {
		if got := string(trimPartialRune([]byte(tc.in))); got != tc.want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// processAlive decides which owners are dead (Prune's DeadOwners, the
// next New's sweep): a live process, this one's or another user's, must
// never be called dead; an exited child must.
func TestProcessAlive(t *testing.T) {
	t.Parallel()
	assert.True(t, processAlive(os.Getpid()), "this process")
	assert.True(t, processAlive(1), "PID 1 (another user's, when not root)")
	child := exec.Command("true")
	require.NoError(t, child.Run())
	assert.False(t, processAlive(child.Process.Pid), "an exited, reaped child")
	for _, pid := range []int{0, -1, 1<<22 - 1} {
		assert.False(t, processAlive(pid), "pid %d", pid)
	}
}

// CPUPercent is over the interval since the handle's previous sample of
// the same run, else since the start; samples out of order do not move
// the previous one back.
func TestUsageCPUPercent(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	var m meterState
	u := m.add(engine.Usage{Started: start, Read: at(10 * time.Second), CPU: time.Second})
	assert.InDelta(t, 10, u.CPUPercent, 1e-9, "first: since the start")
	u = m.add(engine.Usage{Started: start, Read: at(12 * time.Second), CPU: 4 * time.Second})
	assert.InDelta(t, 150, u.CPUPercent, 1e-9, "since the previous sample")
	u = m.add(engine.Usage{Started: start, Read: at(11 * time.Second), CPU: 2 * time.Second})
	assert.InDelta(t, 100*2.0/11, u.CPUPercent, 1e-9, "older than the previous: since the start")
	u = m.add(engine.Usage{Started: at(20 * time.Second), Read: at(24 * time.Second), CPU: time.Second})
	assert.InDelta(t, 25, u.CPUPercent, 1e-9, "restarted: since the new start")
	u = m.add(engine.Usage{Read: at(30 * time.Second), CPU: time.Second})
	assert.Zero(t, u.CPUPercent, "no start, another run: unknown")
}

// A closed handle's Usage is ErrClosed; WatchUsage refuses an interval
// under 100 ms before it measures.
func TestUsageRefused(t *testing.T) {
	s := &Sandbox{}
	s.closed.Store(true)
	_, err := s.Usage(t.Context())
	assert.ErrorIs(t, err, ErrClosed)
	n := 0
	for _, err := range s.WatchUsage(t.Context(), 10*time.Millisecond) {
		assert.ErrorIs(t, err, ErrInvalidOption)
		n++
	}
	assert.Equal(t, 1, n)
	n = 0
	for _, err := range s.WatchUsage(t.Context(), time.Second) {
		assert.ErrorIs(t, err, ErrClosed)
		n++
	}
	assert.Equal(t, 1, n, "a failed sample ends the watch")
}

// Podman 4.3's image list that raced a removal is asked again; other
// failures are not.
func TestListRaced(t *testing.T) {
	raced := errors.New(`Error response from daemon: retrieving size of image "99d9b0df2b34": you may need to remove the image to resolve the error: locating image with ID "99d9b0df2b34": image not known`)
	if !listRaced(raced) {
		t.Errorf("listRaced(%q) = false", raced)
	}
	for _, err := range []error{errors.New("image not known"), errors.New("connection refused")} {
		if listRaced(err) {
			t.Errorf("listRaced(%q) = true", err)
		}
	}
}

// The engine's stalls within a silence are taken off it, once each where
// they overlap, with the question in flight once it waited past
// engineSlow, unless the engine's last answer was missing; at most
// maxExcuse.
func TestEngineWatchExcuse(t *testing.T) {
	sec := int64(time.Second)
	var w engineWatch
	now := time.Now().UnixNano()
	last := now - 20*sec
	assert.Zero(t, w.excuse(last, now), "no stall seen")

	w.stalls[0] = [2]int64{now - 30*sec, now - 17*sec} // began before the silence
	w.stalls[1] = [2]int64{now - 10*sec, now - 7*sec}
	w.stalls[2] = [2]int64{now - 9*sec, now - 6*sec} // overlaps the one before
	assert.Equal(t, 3*time.Second+4*time.Second, w.excuse(last, now))

	w.asked = now - 3*sec
	assert.Equal(t, 10*time.Second, w.excuse(last, now), "a slow question in flight")
	w.asked = now - sec
	assert.Equal(t, 7*time.Second, w.excuse(last, now), "a question just asked excuses nothing yet")
	w.asked, w.lost = now-3*sec, true
	assert.Equal(t, 7*time.Second, w.excuse(last, now), "an engine that did not answer: nothing in flight")

	w = engineWatch{}
	w.stalls[0] = [2]int64{now - 100*sec, now}
	assert.Equal(t, maxExcuse, w.excuse(now-100*sec, now), "no more than maxExcuse")
}

// stallingEngine answers its ping once until has come, or fails it.
type stallingEngine struct {
	engine.Engine
	stall time.Duration // until is set to now + stall when a test starts
	until time.Time
	fail  error
}

func (e *stallingEngine) Ping(ctx context.Context) error {
	if e.fail != nil {
		return e.fail
	}
	select {
	case <-time.After(time.Until(e.until)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// boundByEngine's bound does not count the engine's stalls, and counts
// everything once the engine fails to answer.
func TestBoundByEngine(t *testing.T) {
	const d = 3 * time.Second
	for _, tc := range []struct {
		name     string
		eng      *stallingEngine
		min, max time.Duration
	}{
		{"answering", &stallingEngine{}, d, d + time.Second},
		{"stalled 6 s", &stallingEngine{stall: 6 * time.Second}, d + 5*time.Second, d + 7*time.Second},
		{"unreachable", &stallingEngine{fail: errors.New("connection refused")}, d, d + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Sandbox{eng: tc.eng}
			start := time.Now()
			tc.eng.until = start.Add(tc.eng.stall)
			cancelled := make(chan time.Duration, 1)
			stop := s.boundByEngine(func() { cancelled <- time.Since(start) }, d)
			defer stop()
			select {
			case took := <-cancelled:
				assert.GreaterOrEqual(t, took, tc.min)
				assert.LessOrEqual(t, took, tc.max)
			case <-time.After(d + maxExcuse + 5*time.Second):
				t.Fatal("never cancelled")
			}
		})
	}
}
