package sandbox

import (
	"reflect"
	"testing"
)

// TestDeprecatedForwarders: each former name does what its replacement
// does (CHANGELOG.md's Renamed table), so callers keep working until go
// fix rewrites them.
func TestDeprecatedForwarders(t *testing.T) {
	var _ *DockerSandbox = (*Sandbox)(nil)
	var _ ProcState = ProcessStatus("running")
	var _ func(*Sandbox) = func(s *Sandbox) { _ = s.Start } // the method forwards to StartProcess

	procs := map[string][2]ProcessOption{
		"WithProcessDir": {WithProcessDir("/w"), ProcessDir("/w")},
		"WithProcessEnv": {WithProcessEnv("A=1"), ProcessEnv("A=1")},
		"WithLogSize":    {WithLogSize(4096), ProcessLogSize(4096)},
		"WithTTY":        {WithTTY(24, 80), ProcessTTY(24, 80)},
	}
	for name, pair := range procs {
		var old, cur processConfig
		errOld, errCur := pair[0](&old), pair[1](&cur)
		if !reflect.DeepEqual(old, cur) || (errOld == nil) != (errCur == nil) {
			t.Errorf("%s: %+v (%v), its replacement %+v (%v)", name, old, errOld, cur, errCur)
		}
	}
	reads := map[string][2]ReadOption{"Offset": {Offset(3), ReadOffset(3)}, "Limit": {Limit(7), ReadLimit(7)}}
	for name, pair := range reads {
		var old, cur readConfig
		errOld, errCur := pair[0](&old), pair[1](&cur)
		if old != cur || (errOld == nil) != (errCur == nil) {
			t.Errorf("%s: %+v (%v), its replacement %+v (%v)", name, old, errOld, cur, errCur)
		}
	}
	snap := &Snapshot{ID: "sha256:0123", Labels: map[string]string{}}
	_, errOld := newOptions([]Option{FromSnapshot(snap)}, callNew, "New")
	_, errCur := newOptions([]Option{WithSnapshot(snap)}, callNew, "New")
	if (errOld == nil) != (errCur == nil) || errOld != nil && errOld.Error() != errCur.Error() {
		t.Errorf("FromSnapshot: %v, WithSnapshot: %v", errOld, errCur)
	}
}
