package sandboxmcp_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain builds the test images if needed and fails the run if this
// process leaves a sandbox behind. Sandboxes made by the command's
// processes carry another owner; the tests find them by testLabelKey.
func TestMain(m *testing.M) { testenv.Main(m) }

// testLabelKey is the label every test puts on its sandboxes, with a value
// of its own, to find them whichever process created them.
const testLabelKey = "dockersandbox-mcp-test"

// toolNames are the tools, in the order the server lists them (the SDK
// sorts them by name).
var toolNames = []string{"delete", "edit_file", "execute", "glob", "grep", "ls", "read_file", "write_file"}

// newLabel returns a label value unique to this test.
func newLabel(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", "_") + "-" + rand.Text()[:8]
}

// testConfig is a config for the busybox test image, labelled with label.
func testConfig(label string) sandboxmcp.Config {
	return sandboxmcp.Config{
		Image:      testenv.BusyboxImage,
		PullPolicy: sandbox.PullNever,
		Labels:     map[string]string{testLabelKey: label},
		Logger:     discardLogger(),
	}
}

// commandArgs are the command's flags for the same sandboxes as testConfig.
func commandArgs(label string) []string {
	return []string{"-image", testenv.BusyboxImage, "-pull", "never", "-label", testLabelKey + "=" + label}
}

// containers returns the IDs of the containers, in any state, labelled
// with label; it force-removes them at the end of the test so that a
// failure leaks nothing.
func containers(t *testing.T, label string) []string {
	t.Helper()
	cli := testenv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", testLabelKey+"="+label),
	})
	require.NoError(t, err)
	ids := make([]string, 0, len(res.Items))
	for _, c := range res.Items {
		ids = append(ids, c.ID[:12])
	}
	sort.Strings(ids)
	return ids
}

// removeLeftovers force-removes, at the end of t, every container labelled
// with label, failing t if there was any.
func removeLeftovers(t *testing.T, label string) {
	t.Cleanup(func() {
		cli := testenv.Client(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cli.ContainerList(ctx, client.ContainerListOptions{
			All:     true,
			Filters: make(client.Filters).Add("label", testLabelKey+"="+label),
		})
		if err != nil {
			t.Errorf("listing containers: %v", err)
			return
		}
		for _, c := range res.Items {
			t.Errorf("container %s (label %s) was left behind", c.ID[:12], label)
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
}

// waitGone waits until no container carries label.
func waitGone(t *testing.T, label string, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return len(containers(t, label)) == 0 }, within, 100*time.Millisecond,
		"containers labelled %s still exist", label)
}

// buildCommand builds cmd/sandbox-mcp into a temporary directory.
func buildCommand(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sandbox-mcp")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/sandbox-mcp").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "sandboxmcp-test", Version: "1"}, nil)
}

// call calls a tool and returns its result, failing on a protocol error.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "calling %s", name)
	return res
}

// text returns the text of a result made of one text content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1, "content: %s", mustJSON(res.Content))
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T, not text", res.Content[0])
	return tc.Text
}

// callOK calls a tool that must succeed and returns its text.
func callOK(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res := call(t, ctx, cs, name, args)
	s := text(t, res)
	require.False(t, res.IsError, "%s failed: %s", name, s)
	return s
}

// callInFlight starts a long execute call on cs and gives it half a second
// to start. The returned function checks, after the session or server was
// ended, that the call returned within 10 s, with an error result if any.
func callInFlight(t *testing.T, ctx context.Context, cs *mcp.ClientSession) (fails func()) {
	called := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"command": "sleep 100"}})
		called <- res
	}()
	time.Sleep(500 * time.Millisecond)
	return func() {
		t.Helper()
		select {
		case res := <-called:
			if res != nil {
				assert.True(t, res.IsError, "the call in flight fails: %s", mustJSON(res))
			}
		case <-time.After(10 * time.Second):
			t.Error("the call in flight did not return")
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkTools checks the listed tools: the eight, by name, with their
// descriptions and object schemas.
func checkTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		schema, ok := tool.InputSchema.(map[string]any)
		require.True(t, ok, "%s: schema is %T", tool.Name, tool.InputSchema)
		assert.Equal(t, "object", schema["type"], tool.Name)
		assert.Contains(t, schema, "properties", tool.Name)
	}
	assert.Equal(t, toolNames, names)
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	props := byName["execute"].InputSchema.(map[string]any)["properties"].(map[string]any)
	assert.Contains(t, props, "command")
	assert.Equal(t, []any{"command"}, byName["execute"].InputSchema.(map[string]any)["required"])
	props = byName["read_file"].InputSchema.(map[string]any)["properties"].(map[string]any)
	assert.Contains(t, props, "file_path")
	assert.Contains(t, byName["read_file"].Description, "/workspace")
}

// exercise runs a write, read, grep, ls, edit and command in a sandbox and
// checks the exact texts the model gets.
func exercise(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	res := call(t, ctx, cs, "execute", map[string]any{"command": "echo hello; echo oops >&2; exit 3"})
	assert.True(t, res.IsError == false, "a failing command is a result, not a tool error")
	assert.Equal(t, "hello\noops\n\n[Command failed with exit code 3]", text(t, res))
	assert.EqualValues(t, 3, res.Meta[sandboxmcp.MetaExitCode])

	assert.Equal(t, "Updated file /workspace/notes/a.txt",
		callOK(t, ctx, cs, "write_file", map[string]any{"file_path": "notes/a.txt", "content": "alpha\nbeta gamma\n"}))
	assert.Equal(t, "1  alpha\n2  beta gamma",
		callOK(t, ctx, cs, "read_file", map[string]any{"file_path": "/workspace/notes/a.txt"}))
	assert.Equal(t, "/workspace/notes/a.txt",
		callOK(t, ctx, cs, "grep", map[string]any{"pattern": "gamma"}))
	assert.Equal(t, "/workspace/notes/a.txt:\n  2: beta gamma",
		callOK(t, ctx, cs, "grep", map[string]any{"pattern": "gamma", "output_mode": "content"}))
	assert.Equal(t, "['/workspace/notes/a.txt']",
		callOK(t, ctx, cs, "ls", map[string]any{"path": "/workspace/notes"}))
	assert.Equal(t, "Successfully replaced 1 instance(s) of the string in '/workspace/notes/a.txt'",
		callOK(t, ctx, cs, "edit_file", map[string]any{"file_path": "notes/a.txt", "old_string": "beta", "new_string": "delta"}))
	assert.Equal(t, "['/workspace/notes/a.txt']",
		callOK(t, ctx, cs, "glob", map[string]any{"pattern": "*.txt"}))
	res = call(t, ctx, cs, "execute", map[string]any{"command": "cat notes/a.txt"})
	assert.Equal(t, "alpha\ndelta gamma\n\n[Command succeeded with exit code 0]", text(t, res))
	assert.EqualValues(t, 0, res.Meta[sandboxmcp.MetaExitCode])
	assert.Equal(t, "Deleted /workspace/notes/a.txt",
		callOK(t, ctx, cs, "delete", map[string]any{"file_path": "notes/a.txt"}))
	assert.Equal(t, "No files found", callOK(t, ctx, cs, "ls", map[string]any{"path": "/workspace/notes"}))
}
