package helper

import (
	"encoding/json"

	"github.com/dockersandbox/sandbox/internal/fsops"
)

// A launch crosses to the reaper as JSON; its command, environment and
// directory are bytes (a name that is not UTF-8 must not become another
// name), so they travel as fsops.RawString, as on the helper's own wire.

type launchWire struct {
	Argv []fsops.RawString `json:"argv"`
	Env  []fsops.RawString `json:"env"`
	Dir  fsops.RawString   `json:"dir,omitempty"`
	TTY  bool              `json:"tty,omitempty"`
	// Script: a fourth file comes, the shell's fd 3 (see shellLaunch).
	Script bool `json:"script,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (l launch) MarshalJSON() ([]byte, error) {
	return json.Marshal(launchWire{fsops.RawStrings(l.Argv), fsops.RawStrings(l.Env), fsops.RawString(l.Dir), l.TTY, l.script != nil})
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *launch) UnmarshalJSON(data []byte) error {
	var w launchWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*l = launch{Argv: fsops.Strings(w.Argv), Env: fsops.Strings(w.Env), Dir: string(w.Dir), TTY: w.TTY, Script: w.Script}
	return nil
}
