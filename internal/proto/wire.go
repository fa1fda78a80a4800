package proto

import (
	"encoding/base64"
	"encoding/json"

	"github.com/dockersandbox/sandbox/internal/fsops"
)

// Names, commands, patterns and edit strings are bytes: a Request and a
// Stat carry them as fsops.RawString on the wire, so that a name that is
// not valid UTF-8 reaches the helper (and comes back) byte for byte
// instead of turning into another name. Valid UTF-8 keeps the plain JSON
// string form. The protocol's own words (Op, error codes) stay strings.

// plainRequest is a Request without its JSON methods.
type plainRequest Request

// requestWire is a Request's JSON form: its fields that carry bytes, at
// depth 0, hide the string fields of the embedded Request.
type requestWire struct {
	*plainRequest
	Command wireCommand       `json:"command,omitempty"`
	Env     []fsops.RawString `json:"env,omitempty"`
	Dir     fsops.RawString   `json:"dir,omitempty"`
	Path    fsops.RawString   `json:"path,omitempty"`
	Paths   []fsops.RawString `json:"paths,omitempty"`
	Old     fsops.RawString   `json:"old,omitempty"`
	New     fsops.RawString   `json:"new,omitempty"`
	Pattern fsops.RawString   `json:"pattern,omitempty"`
	Glob    fsops.RawString   `json:"glob,omitempty"`
	Network fsops.RawString   `json:"network,omitempty"`
	Address fsops.RawString   `json:"address,omitempty"` // a unix socket's path is bytes
	Direct  fsops.RawString   `json:"direct,omitempty"`
	Token   fsops.RawString   `json:"token,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (r Request) MarshalJSON() ([]byte, error) {
	return json.Marshal(requestWire{
		plainRequest: (*plainRequest)(&r),
		Command:      wireCommand(r.Command), Env: fsops.RawStrings(r.Env), Dir: fsops.RawString(r.Dir),
		Path: fsops.RawString(r.Path), Paths: fsops.RawStrings(r.Paths),
		Old: fsops.RawString(r.Old), New: fsops.RawString(r.New),
		Pattern: fsops.RawString(r.Pattern), Glob: fsops.RawString(r.Glob),
		Network: fsops.RawString(r.Network), Address: fsops.RawString(r.Address),
		Direct: fsops.RawString(r.Direct), Token: fsops.RawString(r.Token),
	})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Request) UnmarshalJSON(data []byte) error {
	w := requestWire{plainRequest: (*plainRequest)(r)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	r.Command, r.Env, r.Dir = string(w.Command), fsops.Strings(w.Env), string(w.Dir)
	r.Path, r.Paths = string(w.Path), fsops.Strings(w.Paths)
	r.Old, r.New = string(w.Old), string(w.New)
	r.Pattern, r.Glob = string(w.Pattern), string(w.Glob)
	r.Network, r.Address = string(w.Network), string(w.Address)
	r.Direct, r.Token = string(w.Direct), string(w.Token)
	return nil
}

// LongCommand is the length over which a Request's command travels as
// base64, in fsops.RawString's {"b64":...} form (which every helper
// decodes): 4/3 of the command whatever its bytes, where JSON's escapes
// could make it six times as large, so that a command of the library's
// largest fits in a frame.
const LongCommand = 64 << 10

// wireCommand is a Request's command on the wire.
type wireCommand string

// MarshalJSON implements json.Marshaler.
func (c wireCommand) MarshalJSON() ([]byte, error) {
	if len(c) <= LongCommand {
		return fsops.RawString(c).MarshalJSON()
	}
	b := make([]byte, 0, base64.StdEncoding.EncodedLen(len(c))+len(`{"b64":""}`))
	b = append(b, `{"b64":"`...)
	b = base64.StdEncoding.AppendEncode(b, []byte(c))
	return append(b, `"}`...), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *wireCommand) UnmarshalJSON(data []byte) error {
	s := fsops.RawString(*c)
	if err := s.UnmarshalJSON(data); err != nil {
		return err
	}
	*c = wireCommand(s)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (st Stat) MarshalJSON() ([]byte, error) {
	type plain Stat
	return json.Marshal(struct {
		plain
		Resolved fsops.RawString `json:"resolved,omitempty"`
	}{plain(st), fsops.RawString(st.Resolved)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (st *Stat) UnmarshalJSON(data []byte) error {
	type plain Stat
	w := struct {
		*plain
		Resolved fsops.RawString `json:"resolved,omitempty"`
	}{plain: (*plain)(st)}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	st.Resolved = string(w.Resolved)
	return nil
}
