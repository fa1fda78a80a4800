package helper

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The clocks of PID 1: a gap (a pause) counts for neither; a limit file
// replaces the value, is applied once, and junk in it is ignored.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	l := newLimits(2*time.Second, 0, dir, t0)
	now := t0
	step := func(d time.Duration) bool { now = now.Add(d); return l.tick(now) }
	for range 4 {
		if step(limitsTick) {
			t.Fatal("ended before its lifetime")
		}
	}
	if step(time.Hour) { // frozen for an hour
		t.Fatal("the pause counted for the lifetime")
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(LifetimeFile, "1m\n")
	if step(limitsTick) || l.lifetime != time.Minute {
		t.Fatalf("lifetime %v, want 1m", l.lifetime)
	}
	for _, junk := range []string{"-5s", "soon", string(make([]byte, 100))} {
		write(LifetimeFile, junk)
		if step(limitsTick) || l.lifetime != time.Minute {
			t.Fatalf("%q: lifetime %v, want 1m kept", junk, l.lifetime)
		}
	}
	if err := os.Remove(filepath.Join(dir, LifetimeFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, LifetimeFile)); err != nil {
		t.Fatal(err)
	}
	if step(limitsTick) || l.lifetime != time.Minute {
		t.Fatalf("a symlink was followed: lifetime %v", l.lifetime)
	}
	write(IdleFile, "100ms")
	step(limitsTick)
	if l.idle != 100*time.Millisecond || !l.lastActive.Equal(now) {
		t.Fatalf("idle %v, last active %v (now %v)", l.idle, l.lastActive, now)
	}
	write(LifetimeFile+".tmp", "1ns")
	if err := os.Rename(filepath.Join(dir, LifetimeFile+".tmp"), filepath.Join(dir, LifetimeFile)); err != nil {
		t.Fatal(err)
	}
	if !step(limitsTick) {
		t.Fatal("a lifetime already run did not end it")
	}
}
