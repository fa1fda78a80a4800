package proto

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dockersandbox/sandbox/internal/fsops"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awkwardNames are names a file system allows that JSON strings cannot
// carry (or that look like those that cannot).
var awkwardNames = []string{
	"x\xff", "x\uFFFD", "\xc3\x28", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\x80b", "\xff\xfe",
	"", "plain", "über", "tab\there", "new\nline", `quote"back\slash`, "<&>", "\u2028", "\x01\x1f\x7f",
	`{"b64":"eA=="}`,
}

func TestRawStringJSON(t *testing.T) {
	for _, name := range awkwardNames {
		b, err := json.Marshal(fsops.RawString(name))
		require.NoError(t, err, "%q", name)
		require.True(t, json.Valid(b), "%q → %s", name, b)
		if utf8.ValidString(name) {
			var plain string
			require.NoError(t, json.Unmarshal(b, &plain), "valid UTF-8 travels as a plain JSON string")
			assert.Equal(t, name, plain)
		} else {
			assert.True(t, strings.HasPrefix(string(b), `{"b64":`), "%q → %s", name, b)
			var plain string
			assert.Error(t, json.Unmarshal(b, &plain), "a peer that expects a string refuses the bytes instead of mangling them")
		}
		var back fsops.RawString
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, name, string(back), "%q → %s", name, b)
	}
}

func TestRawStringDecodeErrors(t *testing.T) {
	for _, in := range []string{`{}`, `{"b64":"!!"}`, `{"b64":1}`, `1`, `true`, `[]`, `{"x":"eA=="}`} {
		var s fsops.RawString
		assert.Error(t, json.Unmarshal([]byte(in), &s), in)
	}
	s := fsops.RawString("kept")
	require.NoError(t, json.Unmarshal([]byte(`null`), &s))
	assert.Equal(t, fsops.RawString("kept"), s)
	// A JSON string with an escaped lone surrogate decodes as encoding/json
	// decodes it; only the b64 form stands for bytes.
	require.NoError(t, json.Unmarshal([]byte(`"x\udcff"`), &s))
	assert.Equal(t, fsops.RawString("x\uFFFD"), s)
}

// protocolWords are the string fields that hold the protocol's own words or
// messages, not bytes of the sandbox's file system or commands; and a read
// page's Content, which is text: valid UTF-8 by contract (the library's
// Read says so), so invalid bytes past the first 8 KiB of a text file read
// as U+FFFD, as encoding/json makes them.
var protocolWords = map[string]bool{"Op": true, "Arch": true, "Code": true, "Message": true, "Content": true, "Encoding": true}

// fill sets every string of v (recursively through structs, pointers and
// slices) to an invalid-UTF-8 value derived from the field's name, and
// every number and bool to a value other than zero, so that a field that a
// hand-written JSON form forgets fails the round trip.
func fill(t *testing.T, v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(7 + len(name)))
	case reflect.Uint32:
		v.SetUint(uint64(7 + len(name)))
	case reflect.String:
		if !protocolWords[name] {
			v.SetString(name + "\xff\xc3\x28")
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(t, v.Elem(), name)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(t, v.Index(0), name)
		fill(t, v.Index(1), name+"1")
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1, 2).UTC()))
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(t, v.Field(i), f.Name)
			}
		}
	}
}

// TestEveryStringKeepsItsBytes fills every string field of the messages
// with bytes that are not UTF-8: a field added later without a RawString
// form fails here.
func TestEveryStringKeepsItsBytes(t *testing.T) {
	for _, v := range []any{&Request{}, &Result{}, &Stat{}, &fsops.FileInfo{}, &fsops.GrepMatch{}, &fsops.ReadResult{}} {
		fill(t, reflect.ValueOf(v), "")
		b, err := json.Marshal(v)
		require.NoError(t, err)
		back := reflect.New(reflect.TypeOf(v).Elem())
		require.NoError(t, json.Unmarshal(b, back.Interface()), "%s", b)
		assert.Equal(t, v, back.Interface(), "%T through %s", v, b)
	}
}

// TestValidUTF8WireUnchanged checks that a message whose strings are valid
// UTF-8 has the JSON it had before RawString (same keys and values).
func TestValidUTF8WireUnchanged(t *testing.T) {
	type plainRequest Request
	type plainStat Stat
	type plainFileInfo fsops.FileInfo
	type plainGrepMatch fsops.GrepMatch
	mod := time.Unix(1700000000, 5).UTC()
	req := Request{Op: OpGrep, Command: "echo <hi> & \"there\"\n", Env: []string{"A=1"}, Dir: "/w", Path: "/w/über", Paths: []string{"/a", "/b"},
		Old: "o\tld", New: "n\\ew", Pattern: "\u2028p", Glob: "*.go", Limit: 3}
	for _, c := range []struct{ got, want any }{
		{req, plainRequest(req)},
		{Request{Op: OpLs}, plainRequest{Op: OpLs}},
		{Stat{Resolved: "/r", Size: 3, ModTime: mod}, plainStat{Resolved: "/r", Size: 3, ModTime: mod}},
		{Stat{Error: &Error{Code: CodeIsDir, Message: "m"}}, plainStat{Error: &Error{Code: CodeIsDir, Message: "m"}}},
		{fsops.FileInfo{Path: "/a b", Size: 1, ModTime: mod, Mode: 0o755}, plainFileInfo{Path: "/a b", Size: 1, ModTime: mod, Mode: 0o755}},
		{fsops.GrepMatch{Path: "/é", Line: 2, Text: "x\x01y"}, plainGrepMatch{Path: "/é", Line: 2, Text: "x\x01y"}},
	} {
		got, err := json.Marshal(c.got)
		require.NoError(t, err)
		want, err := json.Marshal(c.want)
		require.NoError(t, err)
		var g, w map[string]any
		require.NoError(t, json.Unmarshal(got, &g))
		require.NoError(t, json.Unmarshal(want, &w))
		assert.Equal(t, w, g, "%T: %s vs %s", c.got, got, want)
	}
}

// FuzzWireString checks that any bytes, as a name and as text, survive a
// Request and a Result: valid UTF-8 as a plain JSON string, anything else
// in the b64 form.
func FuzzWireString(f *testing.F) {
	for _, n := range awkwardNames {
		f.Add(n, "/workspace/"+n)
	}
	f.Add(`{"Path":"a\u00e9\ud800\udc00","Line":1}`, `{"b64":"/w=="}`)
	f.Add("x", `"a\ud800\u0041\udfff\ud83d\ude00\/\b\f\"\\`+"\u00ff\u00ed\u00a0\u0080"+`"`)
	f.Add(`{"Path":{"b64":"eP8="},"IsDir":true,"Size":-1,"ModTime":null,"Mode":4294967295}`, `"\`)
	f.Fuzz(func(t *testing.T, a, b string) {
		raw, err := json.Marshal(fsops.RawString(a))
		if err != nil || !json.Valid(raw) {
			t.Fatalf("%q: %s %v", a, raw, err)
		}
		if utf8.ValidString(a) != (raw[0] == '"') {
			t.Fatalf("%q has the wrong form: %s", a, raw)
		}
		var s fsops.RawString
		if err := json.Unmarshal(raw, &s); err != nil || string(s) != a {
			t.Fatalf("%q came back as %q (%v)", a, s, err)
		}
		req := Request{Op: OpEdit, Path: b, Paths: []string{a, b}, Old: a, New: b, Pattern: a, Command: b, Env: []string{a}, Dir: a, Glob: b}
		var gotReq Request
		if data, err := json.Marshal(req); err != nil || json.Unmarshal(data, &gotReq) != nil || !reflect.DeepEqual(req, gotReq) {
			t.Fatalf("request %+v came back as %+v (%s, %v)", req, gotReq, data, err)
		}
		res := Result{
			Entries: []fsops.FileInfo{{Path: a}, {Path: b}},
			Matches: []fsops.GrepMatch{{Path: b, Line: 1, Text: a}},
			Stats:   []Stat{{Resolved: a}},
		}
		var gotRes Result
		if data, err := json.Marshal(res); err != nil || json.Unmarshal(data, &gotRes) != nil || !reflect.DeepEqual(res, gotRes) {
			t.Fatalf("result %+v came back as %+v (%s, %v)", res, gotRes, data, err)
		}
		// A JSON string decodes as encoding/json decodes it.
		var std string
		if json.Unmarshal([]byte(b), &std) == nil {
			var mine fsops.RawString
			if err := json.Unmarshal([]byte(b), &mine); err != nil || string(mine) != std {
				t.Fatalf("%s: encoding/json %q, RawString %q (%v)", b, std, mine, err)
			}
		}
		// Decoding what a hostile peer sends never panics, even unchecked
		// by encoding/json.
		_ = json.Unmarshal([]byte(a), &s)
		_ = json.Unmarshal([]byte(a), &gotReq)
		_ = json.Unmarshal([]byte(a), &gotRes)
		_ = s.UnmarshalJSON([]byte(a))
		_ = new(fsops.FileInfo).UnmarshalJSON([]byte(a))
		_ = new(fsops.GrepMatch).UnmarshalJSON([]byte(a))
	})
}

// A command over LongCommand travels as base64, whatever its bytes: a
// command of JSON's worst bytes (six for one) stays 4/3 of its size, and
// comes back byte for byte; a shorter one stays a plain string.
func TestLongCommandWire(t *testing.T) {
	for _, c := range []string{strings.Repeat("<\x01", 100<<10), strings.Repeat("x\xff", 40<<10), strings.Repeat("a", LongCommand)} {
		b, err := json.Marshal(Request{Op: OpExec, Command: c})
		require.NoError(t, err)
		if len(c) > LongCommand {
			assert.Contains(t, string(b), `"command":{"b64":"`)
			assert.Less(t, len(b), len(c)*4/3+100)
		} else {
			assert.Contains(t, string(b), `"command":"aaa`)
		}
		var back Request
		require.NoError(t, json.Unmarshal(b, &back))
		assert.True(t, back.Command == c, "%d bytes", len(c))
	}
}
