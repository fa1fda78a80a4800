// Package egressflag is the egress policy flags of the sandbox CLI and
// the MCP server: -egress-allow and -egress-policy.
package egressflag

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dockersandbox/sandbox"
)

// Choice is what the flags say.
type Choice struct {
	allow list
	file  string
}

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// AddFlags adds -egress-allow and -egress-policy to fs.
func AddFlags(fs *flag.FlagSet) *Choice {
	c := &Choice{}
	fs.Var(&c.allow, "egress-allow", "give the sandbox an egress policy that allows `destination`: a name, *.suffix, address or range, optionally :port; the sandbox has no other network (repeatable)")
	fs.StringVar(&c.file, "egress-policy", "", "the egress policy's JSON `file`: "+
		`{"allow": [...], "credentials": [{"host", "header", "value_env", "placeholder"}]}; `+
		"a credential's value is read from the environment variable value_env, and never enters the sandbox")
	return c
}

// Set reports whether a flag asks for a policy.
func (c *Choice) Set() bool { return len(c.allow) > 0 || c.file != "" }

// File is the JSON of -egress-policy.
type File struct {
	Allow       []string     `json:"allow"`
	Credentials []Credential `json:"credentials"`
}

// Credential is one credential of a File.
type Credential struct {
	Host        string `json:"host"`
	Header      string `json:"header"`
	ValueEnv    string `json:"value_env"`
	Placeholder string `json:"placeholder"`
}

// ErrBad: the flags or the file cannot be used.
var ErrBad = errors.New("egress policy")

// Policy returns the policy the flags say (nil when none: the sandbox
// keeps its network), with getenv for the credentials' values and log
// for its decisions.
func (c *Choice) Policy(getenv func(string) string, log func(sandbox.EgressEvent)) (*sandbox.EgressPolicy, error) {
	if !c.Set() {
		return nil, nil
	}
	p := &sandbox.EgressPolicy{Allow: append([]string(nil), c.allow...), Log: log}
	if c.file != "" {
		b, err := os.ReadFile(c.file)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBad, err)
		}
		var f File
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBad, c.file, err)
		}
		p.Allow = append(p.Allow, f.Allow...)
		for _, cr := range f.Credentials {
			if cr.ValueEnv == "" {
				return nil, fmt.Errorf("%w: %s: the credential for %q names no value_env", ErrBad, c.file, cr.Host)
			}
			v := getenv(cr.ValueEnv)
			if v == "" {
				return nil, fmt.Errorf("%w: %s: the credential for %q: $%s is empty", ErrBad, c.file, cr.Host, cr.ValueEnv)
			}
			p.Credentials = append(p.Credentials, sandbox.EgressCredential{Host: cr.Host, Header: cr.Header, Value: v, Placeholder: cr.Placeholder})
		}
	}
	// The policy's own check, now, not at the first sandbox.
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBad, err)
	}
	return p, nil
}
