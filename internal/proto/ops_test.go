package proto

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opConstants returns the value of every Op* constant of the package, read
// from its source.
func opConstants(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	consts := map[string]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Op") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok, "%s is not a string literal", n.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					consts[n.Name] = v
				}
			}
		}
	}
	require.NotEmpty(t, consts)
	return consts
}

// The table has one row for every Op* constant, and nothing else.
func TestOpTableCoversEveryOp(t *testing.T) {
	consts := opConstants(t)
	seen := map[string]bool{}
	for _, s := range Ops() {
		assert.False(t, seen[s.Op], "%s has two rows", s.Op)
		seen[s.Op] = true
		assert.Positive(t, s.MaxResult, "%s has no MaxResult", s.Op)
	}
	for name, op := range consts {
		assert.True(t, seen[op], "%s (%q) has no row in the table", name, op)
		delete(seen, op)
	}
	assert.Empty(t, seen, "rows without an Op constant")
}

// The per-op facts that switches used to decide are what they were.
func TestOpTableFacts(t *testing.T) {
	set := func(f func(OpSpec) bool) []string {
		var ops []string
		for _, s := range Ops() {
			if f(s) {
				ops = append(ops, s.Op)
			}
		}
		sort.Strings(ops)
		return ops
	}
	sorted := func(ops ...string) []string { sort.Strings(ops); return ops }
	// The library's retry set (its retrySafe asks RetrySafe).
	assert.Equal(t, sorted(OpRead, OpLs, OpGlob, OpGrep, OpStat, OpPrepare), set(func(s OpSpec) bool { return RetrySafe(s.Op) }))
	assert.Equal(t, sorted(OpExec, OpCat, OpProcRead), set(func(s OpSpec) bool { return HasOutput(s.Op) }))
	assert.Equal(t, sorted(OpCat, OpProcRead), set(func(s OpSpec) bool { return HoldsOutput(s.Op) }))
	assert.Equal(t, sorted(OpDial, OpWatch, OpAccept), set(func(s OpSpec) bool { return IsStream(s.Op) }))
	assert.Equal(t, sorted(OpProcStart, OpProcList, OpProcInfo, OpProcRead, OpProcWrite, OpProcCloseStdin,
		OpProcSignal, OpProcKill, OpProcWait, OpProcResize), set(func(s OpSpec) bool { return IsProcOp(s.Op) }))
	assert.Equal(t, sorted(OpLs, OpGlob, OpGrep, OpStat, OpPrepare, OpProcList), set(func(s OpSpec) bool { return MaxResult(s.Op) == maxListResult }))
	assert.Equal(t, []string{OpRead}, set(func(s OpSpec) bool { return MaxResult(s.Op) == maxReadResult }))
	assert.Equal(t, maxSmallResult, MaxResult("no such op"))

	assert.True(t, Request{Op: OpWrite}.TakesInput())
	assert.True(t, Request{Op: OpProcWrite}.TakesInput())
	assert.True(t, Request{Op: OpExec, Stdin: true}.TakesInput())
	assert.False(t, Request{Op: OpExec}.TakesInput())
	assert.False(t, Request{Op: OpRead}.TakesInput())
	assert.False(t, Request{Op: "no such op", Stdin: true}.TakesInput())
}

// A helper has what it announces; one that announces nothing has the
// version 2 baseline, or, when its hello says TTY, everything the last
// helpers before the list had.
func TestCapabilities(t *testing.T) {
	baseline := Hello{Version: Version}
	preList := Hello{Version: Version, TTY: true}
	current := Hello{Version: Version, TTY: true, Caps: Capabilities()}
	some := Hello{Version: Version, Caps: []Capability{CapInfo}}
	for _, s := range Ops() {
		req := Request{Op: s.Op}
		_, lacks := baseline.Lacks(req)
		assert.Equal(t, s.Needs != "", lacks, "%s on a baseline helper", s.Op)
		_, lacks = preList.Lacks(req)
		assert.Equal(t, s.Needs != "" && !slices.Contains(preCaps, s.Needs), lacks, "%s on a helper that predates the list", s.Op)
		_, lacks = current.Lacks(req)
		assert.False(t, lacks, "%s on this module's helper", s.Op)
		if s.Needs != "" {
			assert.Contains(t, Capabilities(), s.Needs, "%s's capability is listed (and says what it allows)", s.Op)
		}
	}
	c, lacks := baseline.Lacks(Request{Op: OpCat, Offset: 1})
	assert.True(t, lacks)
	assert.Equal(t, CapCatOffset, c)
	_, lacks = baseline.Lacks(Request{Op: OpCat})
	assert.False(t, lacks, "a cat from 0 is baseline")
	c, lacks = baseline.Lacks(Request{Op: OpExec, TTY: &Winsize{Rows: 1, Cols: 1}})
	assert.True(t, lacks)
	assert.Equal(t, CapTTY, c)
	assert.Equal(t, "run commands on a terminal", c.Can())
	_, lacks = some.Lacks(Request{Op: OpInfo})
	assert.False(t, lacks)
	c, _ = some.Lacks(Request{Op: OpProcStart})
	assert.Equal(t, CapProcesses, c)
	_, lacks = some.Lacks(Request{Op: "no such op"})
	assert.False(t, lacks, "an unknown op is the helper's to refuse")
}
