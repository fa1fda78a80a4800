package docker

import (
	"slices"
	"testing"

	"github.com/dockersandbox/sandbox/engine"
)

// Only a root PID 1 on a writable root, running the helper's init, boots.
func TestBootable(t *testing.T) {
	spec := func(user string, ro bool) *engine.Spec {
		return &engine.Spec{User: user, ReadOnlyRootfs: ro, WorkingDir: "/w",
			Helper:  engine.Helper{Path: "/.dockersandbox/sandbox-helper"},
			Command: []string{"/.dockersandbox/sandbox-helper", "init"}}
	}
	for _, c := range []struct {
		user, imageUser string
		ro              bool
		want            bool
	}{
		{"", "", false, true},
		{"root", "", false, true},
		{"0:0", "nobody", false, true},
		{"", "root:root", false, true},
		{"", "nobody", false, false},
		{"1000", "", false, false},
		{"root:staff", "", false, false},
		{"", "", true, false},
	} {
		if got := bootable(spec(c.user, c.ro), c.imageUser); got != c.want {
			t.Errorf("bootable(user %q, image user %q, read-only %v) = %v, want %v", c.user, c.imageUser, c.ro, got, c.want)
		}
	}
	other := spec("", false)
	other.Command = []string{"/bin/sh"}
	if bootable(other, "") {
		t.Error("a command other than the helper's init boots")
	}
}

// The configuration's command reads as the spec gave it, booted or not.
func TestBootedCommand(t *testing.T) {
	sp := &engine.Spec{WorkingDir: "/w", Helper: engine.Helper{Path: "/.dockersandbox/sandbox-helper"},
		Command: []string{"/.dockersandbox/sandbox-helper", "init", "-lifetime", "1h0m0s"}}
	ep := bootEntrypoint(sp, "/run/dockersandbox")
	if want := []string{"/run/dockersandbox/sandbox-helper", "boot", "/.dockersandbox/sandbox-helper", "/w", "init", "-lifetime", "1h0m0s"}; !slices.Equal(ep, want) {
		t.Fatalf("bootEntrypoint = %q, want %q", ep, want)
	}
	if got := bootedCommand(ep); !slices.Equal(got, sp.Command) {
		t.Errorf("bootedCommand(%q) = %q, want %q", ep, got, sp.Command)
	}
	if got := bootedCommand(sp.Command); !slices.Equal(got, sp.Command) {
		t.Errorf("bootedCommand of a command that did not boot = %q", got)
	}
}

// A container's words come out of an attach's frames, whole or cut.
func TestPlainOutput(t *testing.T) {
	frame := func(stream byte, s string) []byte {
		return append([]byte{stream, 0, 0, 0, 0, 0, 0, byte(len(s))}, s...)
	}
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte("raw words\n"), "raw words\n"},
		{append(frame(1, "sandbox-helper boot: "), frame(2, "no room")...), "sandbox-helper boot: no room"},
		{frame(1, "cut short")[:12], "cut "},
		{nil, ""},
	} {
		if got := string(plainOutput(c.in)); got != c.want {
			t.Errorf("plainOutput(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
