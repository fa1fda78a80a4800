package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subcommands are the commands of the CLI.
var subcommands = []string{"create", "exec", "cp", "ls", "rm", "prune", "stats"}

// -h, on the command and on each subcommand, prints the usage on stdout
// and exits 0; an unknown subcommand is named; a bad flag is reported
// once, with where to find the flags, and exits 2.
func TestCLIHelp(t *testing.T) {
	run := build(t)
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		out, errOut, code := run(t, "", args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Contains(t, out, "usage: sandbox <command>", "%v", args)
		assert.Empty(t, errOut, "%v", args)
	}
	for _, cmd := range subcommands {
		for _, h := range []string{"-h", "--help"} {
			out, errOut, code := run(t, "", cmd, h)
			assert.Equal(t, 0, code, "%s %s", cmd, h)
			assert.Contains(t, out, "usage: sandbox "+cmd, "%s %s", cmd, h)
			assert.Empty(t, errOut, "%s %s", cmd, h)
		}
	}
	_, errOut, code := run(t, "", "frobnicate")
	assert.Equal(t, 2, code)
	assert.Equal(t, "sandbox: unknown command \"frobnicate\"\nRun \"sandbox -h\" for the commands.\n", errOut)

	out, errOut, code := run(t, "", "create", "-bogus")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Equal(t, "sandbox create: flag provided but not defined: -bogus\nRun \"sandbox create -h\" for its flags.\n", errOut)
}

// Every command that prints data has -json (and --json).
func TestCLIJSONFlag(t *testing.T) {
	run := build(t)
	for _, cmd := range subcommands {
		out, _, code := run(t, "", cmd, "-h")
		require.Equal(t, 0, code)
		assert.Contains(t, out, "  -json", "%s has -json", cmd)
	}
}

// An unknown ID says "no such sandbox", once, for each command that takes
// one; so does a container that the library did not make.
func TestCLINoSuchSandbox(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	const id = "nosuchsandbox0"
	for _, args := range [][]string{{"exec", id, "--", "true"}, {"cp", id + ":/etc/hostname", "-"}, {"cp", "/etc/hostname", id + ":/x"}, {"rm", id}} {
		out, errOut, code := run(t, "", args...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Empty(t, out, "%v", args)
		assert.Equal(t, "sandbox "+args[0]+": no such sandbox: "+id+"\n", errOut, "%v: printed once", args)
	}
	out, errOut, code := run(t, "", "rm", "-json", id)
	assert.Equal(t, 1, code)
	assert.JSONEq(t, "[]", out)
	assert.Equal(t, 1, strings.Count(errOut, "no such sandbox"), errOut)
}

// jsonKeys returns the keys of the JSON object s, sorted.
func jsonKeys(t *testing.T, s string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// snake matches a snake_case key.
var snake = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// The filters of ls and prune (-owner, -label, -older-than, -dead-owners)
// select the same sandboxes and combine with AND; prune removes only
// those. Every -json output has the documented snake_case keys. create's
// -memory takes a unit.
func TestCLIFiltersAndJSON(t *testing.T) {
	testenv.MustHaveEngine(t)
	run := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runID := rand.Text()[:10]
	label := "dockersandbox-cli-test=" + runID
	mk := func(role string, extra ...string) string {
		args := append([]string{"create", "-image", testenv.BusyboxImage, "-pull", "never", "-network", "none", "-json",
			"-label", label, "-label", "role=" + role}, extra...)
		out, errOut, code := run(t, "", args...)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, []string{"id"}, jsonKeys(t, out))
		var c struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &c))
		t.Cleanup(func() { run(t, "", "rm", c.ID) })
		return c.ID
	}
	web := mk("web", "-memory", "1g")
	db := mk("db")

	info, err := testenv.Client(t).ContainerInspect(ctx, web, client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 1<<30, info.Container.HostConfig.Memory, "-memory 1g")

	ls := func(args ...string) []map[string]any {
		t.Helper()
		out, errOut, code := run(t, "", append([]string{"ls", "-json"}, args...)...)
		require.Equal(t, 0, code, errOut)
		var list []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &list), out)
		return list
	}
	idsOf := func(list []map[string]any) []string {
		var out []string
		for _, s := range list {
			out = append(out, s["id"].(string))
		}
		slices.Sort(out)
		return out
	}
	both := []string{web, db}
	slices.Sort(both)
	list := ls("-label", label)
	assert.Equal(t, both, idsOf(list))
	for _, s := range list {
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
			assert.Regexp(t, snake, k)
		}
		slices.Sort(keys)
		assert.Equal(t, []string{"created", "id", "image", "labels", "name", "owner", "state"}, keys)
		assert.Equal(t, "cli", s["owner"])
		created, err := time.Parse(time.RFC3339, s["created"].(string))
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now(), created, 2*time.Minute)
	}
	assert.Equal(t, []string{web}, idsOf(ls("-label", label, "-label", "role=web")), "labels AND")
	assert.Equal(t, []string{db}, idsOf(ls("-label", label, "-owner", "cli", "-label", "role=db")), "owner AND label")
	assert.Empty(t, ls("-label", label, "-older-than", "1h"), "label AND age")
	assert.Empty(t, ls("-label", label, "-dead-owners"), "cli-owned sandboxes are not orphans")
	assert.Empty(t, ls("-label", label, "-owner", "someone-else"))

	// exec -json and cp -json keys.
	out, _, code := run(t, "", "exec", "-json", web, "--", "true")
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"exit_code", "oom_killed", "output", "timed_out", "truncated"}, jsonKeys(t, out))
	local := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(local, []byte("payload"), 0o644))
	out, errOut, code := run(t, "", "cp", "--json", local, web+":f")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `{"src": "`+local+`", "dst": "`+web+`:f", "bytes": 7}`, out)
	assert.Empty(t, errOut, "no progress line with -json")

	// prune with the same filters removes only what they select.
	out, errOut, code = run(t, "", "prune", "-json", "-label", label, "-label", "role=db")
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `["`+db+`"]`, out)
	assert.Equal(t, []string{web}, idsOf(ls("-label", label)))
	out, errOut, code = run(t, "", "rm", "--json", web)
	require.Equal(t, 0, code, errOut)
	assert.JSONEq(t, `["`+web+`"]`, out)
	assert.Empty(t, ls("-label", label))
}

// mcpInstall is the install command of sandbox-mcp that internal/cli's
// hint gives.
const mcpInstall = `go build -C mcp -o "$(go env GOPATH)/bin/sandbox-mcp" ./cmd/sandbox-mcp`

// Without sandbox-mcp on PATH, sandbox mcp says how to install it: the
// README's command, into the README's install directory.
func TestCLIMCPHint(t *testing.T) {
	run := build(t)
	readme, err := os.ReadFile("../../mcp/README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), mcpInstall, "mcp/README.md installs sandbox-mcp the same way")
	t.Setenv("PATH", t.TempDir())
	_, errOut, code := run(t, "", "mcp")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, mcpInstall)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
}
