package egressflag

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/dockersandbox/sandbox"
)

// parse parses args with the flags and returns the policy they say, with
// env as the environment.
func parse(t *testing.T, env map[string]string, args ...string) (*sandbox.EgressPolicy, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c.Policy(func(k string) string { return env[k] }, nil)
}

// policyFile writes a policy file and returns its path.
func policyFile(t *testing.T, json string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNoFlagsNoPolicy(t *testing.T) {
	p, err := parse(t, nil)
	if p != nil || err != nil {
		t.Fatalf("no flags: %v, %v; want no policy", p, err)
	}
}

// The file's entries follow the flags', and a credential's value comes
// from the variable value_env names.
func TestFileMergedWithFlags(t *testing.T) {
	f := policyFile(t, `{"allow": ["pypi.org", "*.pythonhosted.org:443"],
		"credentials": [{"host": "api.github.com", "header": "Authorization", "value_env": "GH_TOKEN", "placeholder": "PH"}]}`)
	p, err := parse(t, map[string]string{"GH_TOKEN": "ghp_secret"},
		"-egress-allow", "api.github.com", "-egress-policy", f, "-egress-allow", "10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"api.github.com", "10.0.0.0/8", "pypi.org", "*.pythonhosted.org:443"}
	if len(p.Allow) != len(want) {
		t.Fatalf("Allow = %q, want %q", p.Allow, want)
	}
	for i := range want {
		if p.Allow[i] != want[i] {
			t.Fatalf("Allow = %q, want %q", p.Allow, want)
		}
	}
	wantCred := sandbox.EgressCredential{Host: "api.github.com", Header: "Authorization", Value: "ghp_secret", Placeholder: "PH"}
	if len(p.Credentials) != 1 || p.Credentials[0] != wantCred {
		t.Fatalf("Credentials = %+v, want %+v", p.Credentials, wantCred)
	}
}

// Each bad input is ErrBad, naming what is wrong.
func TestBadPolicies(t *testing.T) {
	env := map[string]string{"SET": "v", "EMPTY": ""}
	for _, c := range []struct {
		name, json string
		args       []string
	}{
		{name: "an unknown field", json: `{"allow": ["a.example"], "alow": ["b.example"]}`},
		{name: "an unknown credential field", json: `{"credentials": [{"host": "a.example", "header": "X", "value": "inline"}]}`},
		{name: "no value_env", json: `{"allow": ["a.example"], "credentials": [{"host": "a.example", "header": "X"}]}`},
		{name: "an empty variable", json: `{"allow": ["a.example"], "credentials": [{"host": "a.example", "header": "X", "value_env": "EMPTY"}]}`},
		{name: "an unset variable", json: `{"allow": ["a.example"], "credentials": [{"host": "a.example", "header": "X", "value_env": "UNSET"}]}`},
		{name: "not JSON", json: `allow: a.example`},
		{name: "a bad entry in the file", json: `{"allow": ["bad name"]}`},
		{name: "a credential without its header", json: `{"allow": ["a.example"], "credentials": [{"host": "a.example", "value_env": "SET"}]}`},
		{name: "a bad flag entry", args: []string{"-egress-allow", "bad name"}},
		{name: "a missing file", args: []string{"-egress-policy", filepath.Join(t.TempDir(), "none.json")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.json != "" {
				args = []string{"-egress-policy", policyFile(t, c.json)}
			}
			p, err := parse(t, env, args...)
			if !errors.Is(err, ErrBad) {
				t.Fatalf("%s: policy %+v, error %v; want ErrBad", c.name, p, err)
			}
			t.Log(err)
		})
	}
}
