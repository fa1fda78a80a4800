package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
)

// args reads one call's JSON arguments strictly: each handler asks for the
// fields it knows, then done reports every problem at once (wrong types,
// missing required fields, and fields nobody asked for).
type args struct {
	tool     string
	fields   map[string]json.RawMessage
	seen     map[string]bool
	problems []string
}

// parseArgs decodes raw as a JSON object. Empty input and null count as {}.
func parseArgs(tool string, raw json.RawMessage) (*args, *Result) {
	a := &args{tool: tool, fields: map[string]json.RawMessage{}, seen: map[string]bool{}}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return a, nil
	}
	if !json.Valid(trimmed) {
		r := errorf("Error: invalid arguments for %s: arguments are not valid JSON", tool)
		return nil, &r
	}
	if trimmed[0] != '{' {
		r := errorf("Error: invalid arguments for %s: arguments must be a JSON object, got %s", tool, jsonKind(trimmed))
		return nil, &r
	}
	if err := json.Unmarshal(trimmed, &a.fields); err != nil {
		r := errorf("Error: invalid arguments for %s: %v", tool, err)
		return nil, &r
	}
	return a, nil
}

// done returns the invalid-arguments Result when any problem was found.
func (a *args) done() (Result, bool) {
	var unknown []string
	for name := range a.fields {
		if !a.seen[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	problems := a.problems
	for _, name := range unknown {
		problems = append(problems, fmt.Sprintf("unknown argument %q", name))
	}
	if len(problems) == 0 {
		return Result{}, false
	}
	return errorf("Error: invalid arguments for %s: %s", a.tool, strings.Join(problems, "; ")), true
}

func (a *args) problem(format string, v ...any) {
	a.problems = append(a.problems, fmt.Sprintf(format, v...))
}

// get returns the raw value of name; null counts as absent.
func (a *args) get(name string, required bool) (json.RawMessage, bool) {
	a.seen[name] = true
	raw, ok := a.fields[name]
	if ok && string(bytes.TrimSpace(raw)) == "null" {
		ok = false
	}
	if !ok && required {
		a.problem("missing required argument %q", name)
	}
	return raw, ok
}

// str reads a string argument.
func (a *args) str(name string, required bool) (string, bool) {
	raw, ok := a.get(name, required)
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		a.problem("%q must be a string, got %s", name, jsonKind(raw))
		return "", false
	}
	return s, true
}

// boolean reads a boolean argument.
func (a *args) boolean(name string) (bool, bool) {
	raw, ok := a.get(name, false)
	if !ok {
		return false, false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		a.problem("%q must be a boolean (true or false), got %s", name, jsonKind(raw))
		return false, false
	}
	return b, true
}

// bigInt reads an integer argument of any size. A number with a zero
// fractional part (5.0, 1e3) is an integer.
func (a *args) bigInt(name string) (*big.Int, bool) {
	raw, ok := a.get(name, false)
	if !ok {
		return nil, false
	}
	n, err := parseInteger(raw)
	if err != "" {
		a.problem("%q %s", name, err)
		return nil, false
	}
	return n, true
}

// integer reads an integer argument that must fit in an int.
func (a *args) integer(name string) (int, bool) {
	n, ok := a.bigInt(name)
	if !ok {
		return 0, false
	}
	if !n.IsInt64() || n.Int64() > math.MaxInt || n.Int64() < math.MinInt {
		a.problem("%q is out of range: %s", name, n)
		return 0, false
	}
	return int(n.Int64()), true
}

// maxExponent bounds the binary exponent of a non-literal integer (1e400 is
// fine, 1e100000000 is not) so that parsing stays cheap.
const maxExponent = 4096

// parseInteger parses a JSON number that must be integral; the error is a
// phrase to put after the argument's name.
func parseInteger(raw json.RawMessage) (*big.Int, string) {
	if kind := jsonKind(raw); kind != "a number" {
		return nil, "must be an integer, got " + kind
	}
	s := string(bytes.TrimSpace(raw))
	if n, ok := new(big.Int).SetString(s, 10); ok {
		return n, ""
	}
	f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil {
		return nil, "must be an integer, got " + s
	}
	if f.MantExp(nil) > maxExponent {
		return nil, "is out of range: " + s
	}
	// Precise enough for every integer below 2**maxExponent.
	f, _, err = big.ParseFloat(s, 10, maxExponent+64, big.ToNearestEven)
	if err != nil || !f.IsInt() {
		return nil, "must be an integer, got " + s
	}
	n, _ := f.Int(nil)
	return n, ""
}

// jsonKind names the JSON type of raw for error messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
