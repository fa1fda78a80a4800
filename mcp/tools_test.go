package sandboxmcp_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/dockersandbox/sandbox/internal/sandboxtest"
	sandboxmcp "github.com/dockersandbox/sandbox/mcp"
	"github.com/dockersandbox/sandbox/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCallToolResult(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	b64 := base64.StdEncoding.EncodeToString(png)
	code := 7
	for _, tc := range []struct {
		name string
		in   tools.Result
		want string // the result's JSON
	}{
		{"text", tools.Result{Text: "hi"},
			`{"content":[{"type":"text","text":"hi"}]}`},
		{"empty text", tools.Result{},
			`{"content":[{"type":"text","text":""}]}`},
		{"error", tools.Result{Text: "Error: no", IsError: true},
			`{"content":[{"type":"text","text":"Error: no"}],"isError":true}`},
		{"exit code", tools.Result{Text: "out\n[Command failed with exit code 7]", ExitCode: &code},
			`{"_meta":{"com.dockersandbox/exitCode":7},"content":[{"type":"text","text":"out\n[Command failed with exit code 7]"}]}`},
		{"image", tools.Result{Text: "an image", Media: &tools.Media{Type: "image", MIMEType: "image/png", Data: b64}},
			`{"content":[{"type":"text","text":"an image"},{"type":"image","mimeType":"image/png","data":"` + b64 + `"}]}`},
		{"audio", tools.Result{Text: "a sound", Media: &tools.Media{Type: "audio", MIMEType: "audio/mpeg", Data: b64}},
			`{"content":[{"type":"text","text":"a sound"},{"type":"audio","mimeType":"audio/mpeg","data":"` + b64 + `"}]}`},
		{"file", tools.Result{Text: "a pdf", Media: &tools.Media{Type: "file", MIMEType: "application/pdf", Data: b64}},
			`{"content":[{"type":"text","text":"a pdf"},{"type":"resource","resource":{"uri":"file:///","mimeType":"application/pdf","blob":"` + b64 + `"}}]}`},
		{"media only", tools.Result{Media: &tools.Media{Type: "image", MIMEType: "image/png", Data: b64}},
			`{"content":[{"type":"image","mimeType":"image/png","data":"` + b64 + `"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(sandboxmcp.CallToolResult(tc.in))
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

// TestReadMedia: read_file of an image or a PDF reaches the client as
// image content, or as an embedded resource named after the file.
func TestReadMedia(t *testing.T) {
	label := newLabel(t)
	removeLeftovers(t, label)
	ctx := sandboxtest.Context(t)
	cs, _ := serveInMemory(t, ctx, testConfig(label), "")
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	callOK(t, ctx, cs, "execute", map[string]any{"command": `printf '\211PNG\r\n\032\n\000\000\000\rIHDR' > pic.png; printf '%%PDF-1.4\n\000\001' > 'my doc.pdf'`})

	res := call(t, ctx, cs, "read_file", map[string]any{"file_path": "pic.png"})
	require.False(t, res.IsError, mustJSON(res))
	require.Len(t, res.Content, 2, mustJSON(res))
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "/workspace/pic.png is an image (image/png, 16 bytes)")
	img, ok := res.Content[1].(*mcp.ImageContent)
	require.True(t, ok, "%T", res.Content[1])
	assert.Equal(t, "image/png", img.MIMEType)
	assert.Equal(t, []byte(png), img.Data)

	res = call(t, ctx, cs, "read_file", map[string]any{"file_path": "/workspace/my doc.pdf"})
	require.False(t, res.IsError, mustJSON(res))
	require.Len(t, res.Content, 2, mustJSON(res))
	er, ok := res.Content[1].(*mcp.EmbeddedResource)
	require.True(t, ok, "%T", res.Content[1])
	assert.Equal(t, "file:///workspace/my%20doc.pdf", er.Resource.URI)
	assert.Equal(t, "application/pdf", er.Resource.MIMEType)
	assert.Equal(t, []byte("%PDF-1.4\n\x00\x01"), er.Resource.Blob)
}
