package tools

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dockersandbox/sandbox"
)

// execProc is what the session tools use of one process of the sandbox
// (execprocess.go adapts *sandbox.Process to it).
type execProc interface {
	// read returns the output from cursor on, waiting up to wait for some
	// when there is none yet.
	read(ctx context.Context, cursor int64, wait time.Duration) (procChunk, error)
	// wait waits up to d for the process to exit and reports whether it did.
	wait(ctx context.Context, d time.Duration) (bool, error)
	write(ctx context.Context, p []byte) error
	kill(ctx context.Context) error
	// interrupt sends SIGINT to the process's group.
	interrupt(ctx context.Context) error
}

// procChunk is one read of a process's output: the log's bytes from
// cursor+dropped to next.
type procChunk struct {
	data    []byte
	next    int64 // the cursor of the next read
	dropped int64 // bytes the log no longer held at the cursor
	done    bool  // the process exited and its output ended at next
	code    int   // the exit code, when done
}

// session is one process started by exec_command.
type session struct {
	id      int
	proc    execProc
	procID  string // the sandbox's ID of the process
	command string
	tty     bool
	started time.Time

	mu     sync.Mutex // held by the call that reads the output
	cursor int64

	state sync.Mutex // guards the fields below
	ended bool       // the process exited (the model may not know yet)
	code  int
	at    time.Time // when the exit was seen
}

// sessions is the table of one tool set.
type sessions struct {
	mu   sync.Mutex
	next int
	max  int
	m    map[int]*session
}

// firstSessionID is the first session ID a tool set gives; IDs are never
// reused.
const firstSessionID = 1000

func newSessions(max int) *sessions {
	return &sessions{next: firstSessionID, max: max, m: map[int]*session{}}
}

// reserve takes the next session ID; it fails when the table is full.
func (t *sessions) reserve() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= t.max {
		return 0, false
	}
	id := t.next
	t.next++
	t.m[id] = nil // reserved
	return id, true
}

func (t *sessions) put(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[s.id] = s
}

func (t *sessions) release(id int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, id)
}

func (t *sessions) get(id int) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// list returns the sessions by ID.
func (t *sessions) list() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.m))
	for _, s := range t.m {
		if s != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// collect reads the session's output into out until the process exits
// and its output ends, or until the deadline, and returns the report.
// The caller holds s.mu. Once out holds more than its budget, the middle
// of the output is no longer read while waiting: the process's log keeps
// the latest bytes, read at the end for the tail (what the log dropped in
// between counts as cut).
func (s *session) collect(ctx context.Context, deadline time.Time, out *headTail, maxReads int) (rep execReport, err error) {
	rep.out = out
	for reads := 0; ; reads++ {
		wait := max(time.Until(deadline), 0)
		if out.total > int64(out.budget) && wait > 0 {
			exited, err := s.proc.wait(ctx, wait)
			if err != nil {
				return rep, err
			}
			if !exited {
				wait = 0 // the deadline passed: read the tail
			}
		}
		c, err := s.proc.read(ctx, s.cursor, wait)
		if err != nil {
			return rep, err
		}
		if c.dropped > 0 {
			if out.total == 0 {
				rep.dropped += c.dropped
			} else {
				out.skip(c.dropped)
			}
		}
		out.Write(c.data)
		s.cursor = c.next
		if c.done {
			s.setEnded(c.code)
			rep.exitCode = c.code
			return rep, nil
		}
		if time.Until(deadline) <= 0 && (len(c.data) == 0 || reads >= maxReads) {
			// The deadline passed and the output read so far is what there
			// was (or as much as one call reads).
			rep.running = true
			rep.sessionID = s.id
			return rep, nil
		}
	}
}

func (s *session) setEnded(code int) { s.setEndedAt(code, time.Now()) }

// setEndedAt records the exit of the process, at the time given.
func (s *session) setEndedAt(code int, at time.Time) {
	s.state.Lock()
	defer s.state.Unlock()
	if !s.ended {
		s.ended, s.code, s.at = true, code, at
	}
}

// describe is the session's line in list_sessions.
func (s *session) describe(now time.Time) string {
	s.state.Lock()
	ended, code, at := s.ended, s.code, s.at
	s.state.Unlock()
	var b strings.Builder
	b.WriteString("Session ID ")
	b.WriteString(strconv.Itoa(s.id))
	b.WriteString(": ")
	if ended {
		fmt.Fprintf(&b, "exited with code %d after %.1f seconds (output not yet collected)", code, at.Sub(s.started).Seconds())
	} else {
		fmt.Fprintf(&b, "running for %.1f seconds", now.Sub(s.started).Seconds())
	}
	if s.tty {
		b.WriteString(", tty")
	}
	b.WriteString(": ")
	b.WriteString(oneLine(sandbox.SafeText(s.command), 200))
	return b.String()
}

// oneLine shows a command on one line of at most n bytes (plus "…").
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = cutPrefix(s, n) + "…"
	}
	return s
}
