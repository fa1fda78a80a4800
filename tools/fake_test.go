package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/require"
)

// fakeSandbox is a Sandbox whose answers the test sets. It records each
// call as "op path [options]". Options are opaque functions of the sandbox
// package, so only the names of their constructors are recorded
// ("Offset", "Limit", "ExecTimeout", ...).
type fakeSandbox struct {
	wd string

	execute func(command string) (sandbox.ExecuteResponse, error)
	read    func(path string) (sandbox.ReadResult, error)
	write   func(path string, content []byte) error
	edit    func(path, oldString, newString string, replaceAll bool) (int, error)
	ls      func(path string) ([]sandbox.FileInfo, error)
	glob    func(ctx context.Context, pattern, path string) (sandbox.GlobResult, error)
	grep    func(pattern string) (sandbox.GrepResult, error)
	delete  func(path string) error

	mu    sync.Mutex
	calls []string
}

func (f *fakeSandbox) WorkingDir() string { return f.wd }

func (f *fakeSandbox) record(op string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := []string{op}
	for _, a := range args {
		parts = append(parts, fmt.Sprint(a))
	}
	f.calls = append(f.calls, strings.Join(parts, " "))
}

// lastCall returns the last recorded call.
func (f *fakeSandbox) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

// optNames names the constructors of sandbox options.
func optNames[T any](opts []T) []string {
	var out []string
	for _, o := range opts {
		// "....Offset.func1", also when inlined into a caller.
		parts := strings.Split(runtime.FuncForPC(reflect.ValueOf(o).Pointer()).Name(), ".")
		out = append(out, parts[max(len(parts)-2, 0)])
	}
	return out
}

func (f *fakeSandbox) Execute(ctx context.Context, command string, opts ...sandbox.ExecOption) (sandbox.ExecuteResponse, error) {
	f.record("execute", command, optNames(opts))
	if f.execute == nil {
		return sandbox.ExecuteResponse{}, nil
	}
	return f.execute(command)
}

func (f *fakeSandbox) Read(ctx context.Context, path string, opts ...sandbox.ReadOption) (sandbox.ReadResult, error) {
	f.record("read", path, optNames(opts))
	if f.read == nil {
		return sandbox.ReadResult{Encoding: "utf-8", NextOffset: -1, TotalLines: 0}, nil
	}
	return f.read(path)
}

func (f *fakeSandbox) Write(ctx context.Context, path string, content []byte) error {
	f.record("write", path, len(content))
	if f.write == nil {
		return nil
	}
	return f.write(path, content)
}

func (f *fakeSandbox) Edit(ctx context.Context, path, oldString, newString string, replaceAll bool) (int, error) {
	f.record("edit", path, replaceAll)
	if f.edit == nil {
		return 1, nil
	}
	return f.edit(path, oldString, newString, replaceAll)
}

func (f *fakeSandbox) Ls(ctx context.Context, path string) ([]sandbox.FileInfo, error) {
	f.record("ls", path)
	if f.ls == nil {
		return nil, nil
	}
	return f.ls(path)
}

func (f *fakeSandbox) Glob(ctx context.Context, pattern, path string) (sandbox.GlobResult, error) {
	f.record("glob", pattern, path)
	if f.glob == nil {
		return sandbox.GlobResult{}, nil
	}
	return f.glob(ctx, pattern, path)
}

func (f *fakeSandbox) Grep(ctx context.Context, pattern, path string, opts ...sandbox.GrepOption) (sandbox.GrepResult, error) {
	f.record("grep", pattern, path, optNames(opts))
	if f.grep == nil {
		return sandbox.GrepResult{}, nil
	}
	return f.grep(pattern)
}

func (f *fakeSandbox) Delete(ctx context.Context, path string) error {
	f.record("delete", path)
	if f.delete == nil {
		return nil
	}
	return f.delete(path)
}

// newFake returns a fake sandbox working in /workspace.
func newFake() *fakeSandbox { return &fakeSandbox{wd: "/workspace"} }

// call runs the tool name of a tool set over sb with the JSON arguments.
func call(t testing.TB, sb Sandbox, name, arguments string) Result {
	t.Helper()
	return callOpts(t, sb, Options{}, name, arguments)
}

func callOpts(t testing.TB, sb Sandbox, opts Options, name, arguments string) Result {
	t.Helper()
	tool, ok := Lookup(New(sb, opts), name)
	require.True(t, ok, "no tool %q", name)
	return tool.Call(context.Background(), json.RawMessage(arguments))
}
