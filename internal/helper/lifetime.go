package helper

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The lifetime and the idle timeout of a running sandbox can be changed by
// the library: it writes the new value, as a Go duration ("90s"; "0s" for
// none), to a file next to the helper (LifetimeFile, IdleFile) through the
// engine's archive API, as root, and PID 1 looks at the files every
// limitsTick. A value read there replaces the one given on the command
// line, also when the container starts again (stop and start).
const (
	LifetimeFile = "lifetime"
	IdleFile     = "idle"
)

// limitsTick is how often PID 1 advances its clocks and looks at the files.
const limitsTick = 200 * time.Millisecond

// pauseGap: a tick that comes this much later than due means the helper
// could not run (the container was paused, its cgroup frozen): the gap
// counts for neither the lifetime nor the idle timeout, and the idle clock
// starts again.
const pauseGap = 2 * time.Second

// maxLimitFile bounds what PID 1 reads of a limit file (anything in the
// container may have written it).
const maxLimitFile = 64

// limits are PID 1's lifetime and idle clocks.
type limits struct {
	dir            string
	lifetime, idle time.Duration     // 0: none
	ran            time.Duration     // running time since start, pauses excluded
	last           time.Time         // the last tick
	lastActive     time.Time         // the last request seen
	lastCheck      time.Time         // the last look for one-request helpers
	seen           [2]*time.Duration // the values of LifetimeFile and IdleFile last applied
}

func newLimits(lifetime, idle time.Duration, dir string, now time.Time) *limits {
	l := &limits{dir: dir, lifetime: lifetime, idle: idle, last: now, lastActive: now, lastCheck: now}
	l.poll(now)
	return l
}

// active records a request.
func (l *limits) active(now time.Time) { l.lastActive = now }

// tick advances the clocks to now and says whether the sandbox must end.
func (l *limits) tick(now time.Time) bool {
	d := now.Sub(l.last)
	l.last = now
	if d > pauseGap {
		d = limitsTick
		l.lastActive = now
	}
	if d > 0 {
		l.ran += d
	}
	l.poll(now)
	if l.lifetime > 0 && l.ran >= l.lifetime {
		return true
	}
	if l.idle > 0 && now.Sub(l.lastCheck) >= idleCheck(l.idle) {
		l.lastCheck = now
		if connected() {
			l.lastActive = now
		} else if now.Sub(l.lastActive) >= l.idle {
			return true
		}
	}
	return false
}

// idleCheck is how often the idle timeout looks for one-request helpers.
func idleCheck(idle time.Duration) time.Duration {
	return min(max(idle/10, 100*time.Millisecond), time.Second)
}

// poll applies a limit file written since the last look. A file that is
// not a small regular file, or does not hold a duration >= 0, is ignored.
func (l *limits) poll(now time.Time) {
	for i, name := range []string{LifetimeFile, IdleFile} {
		d, ok := readLimit(filepath.Join(l.dir, name))
		if !ok || l.seen[i] != nil && *l.seen[i] == d {
			continue
		}
		l.seen[i] = &d
		if i == 0 {
			l.lifetime = d
		} else {
			l.idle, l.lastActive = d, now // the change counts as activity
		}
	}
}

// readLimit reads a limit file; ok is false when there is none to apply.
func readLimit(p string) (d time.Duration, ok bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxLimitFile {
		return 0, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxLimitFile))
	if err != nil {
		return 0, false
	}
	d, err = time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}
