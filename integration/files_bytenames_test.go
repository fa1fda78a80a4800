package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Names are bytes: a name that is not UTF-8 is addressed exactly, never as
// the name JSON would have made of it (U+FFFD for each bad byte).

// byteNames maps names (relative to the test directory) to their content.
// "x\xff" and "x\uFFFD" are both present: the old wire made the first
// into the second.
var byteNames = map[string]string{
	"x\xff":          "ff",
	"x\uFFFD":        "fffd",
	"\xc3\x28":       "c328",
	"s\xed\xa0\x80":  "surrogate",
	"d\xfe/in\xff":   "inner",
	"d\xfe/in\uFFFD": "inner fffd",
}

// inShell is name as a shell word built by printf from octal escapes, so
// that the setup and the checks do not go through the library's names.
func inShell(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x80 && c != '\'' && c != '\\' && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\%03o`, c)
		}
	}
	return `"$(printf '` + b.String() + `')"`
}

// shCat returns the content of dir/name as the shell sees it, or "<none>".
func shCat(t *testing.T, sb *sandbox.Sandbox, dir, name string) string {
	t.Helper()
	return mustSh(t, sb, "cd "+dir+" && if [ -e "+inShell(name)+" ]; then cat "+inShell(name)+"; else echo '<none>'; fi")
}

// checkOthers requires every byte name but the ones in skip to hold its
// original content, as the shell sees it.
func checkOthers(t *testing.T, sb *sandbox.Sandbox, dir string, skip ...string) {
	t.Helper()
	for name, want := range byteNames {
		if !slices.Contains(skip, name) {
			assert.Equal(t, want, shCat(t, sb, dir, name), "%q was touched", name)
		}
	}
}

func makeByteNames(t *testing.T, sb *sandbox.Sandbox) string {
	t.Helper()
	dir := testDir(t)
	cmd := "mkdir -p " + dir + " && cd " + dir + " && mkdir " + inShell("d\xfe")
	for name, content := range byteNames {
		cmd += " && printf %s " + shellQuote(content) + " > " + inShell(name)
	}
	mustSh(t, sb, cmd)
	return dir
}

func TestByteNamesReadWriteEditDelete(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		dir := makeByteNames(t, sb)
		for name, want := range byteNames {
			r, err := sb.Read(ctx, dir+"/"+name)
			require.NoError(t, err, "%q", name)
			assert.Equal(t, want, r.Content, "read %q", name)
		}

		require.NoError(t, sb.Write(ctx, dir+"/x\xff", []byte("written")))
		assert.Equal(t, "written", shCat(t, sb, dir, "x\xff"))
		checkOthers(t, sb, dir, "x\xff")

		n, err := sb.Edit(ctx, dir+"/x\uFFFD", "fffd", "edited \xfe", false)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, []byte("edited \xfe"), download(t, sb, dir+"/x\uFFFD"), "the new string is bytes too")
		assert.Equal(t, "written", shCat(t, sb, dir, "x\xff"))
		_, err = sb.Edit(ctx, dir+"/d\xfe/in\xff", "inner", "x", false)
		require.NoError(t, err)
		assert.Equal(t, "x", shCat(t, sb, dir, "d\xfe/in\xff"))
		assert.Equal(t, "inner fffd", shCat(t, sb, dir, "d\xfe/in\uFFFD"))

		require.NoError(t, sb.Delete(ctx, dir+"/\xc3\x28"))
		assert.Equal(t, "<none>", shCat(t, sb, dir, "\xc3\x28"))
		require.NoError(t, sb.Delete(ctx, dir+"/x\xff"))
		assert.Equal(t, "<none>", shCat(t, sb, dir, "x\xff"))
		assert.Equal(t, []byte("edited \xfe"), download(t, sb, dir+"/x\uFFFD"))
		checkOthers(t, sb, dir, "x\xff", "x\uFFFD", "\xc3\x28", "d\xfe/in\xff")

		// A missing name that differs by one byte is missing, not the neighbour.
		_, err = sb.Read(ctx, dir+"/x\xfe")
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.ErrorIs(t, sb.Delete(ctx, dir+"/x\xfe"), fs.ErrNotExist)
		// What no file name can hold is refused.
		_, err = sb.Read(ctx, dir+"/x\x00\xff")
		assert.ErrorIs(t, err, sandbox.ErrInvalidPath)
	})
}

func TestByteNamesListAndSearch(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		dir := makeByteNames(t, sb)
		mustSh(t, sb, "cd "+dir+" && printf 'line \\377 here\\n' > "+inShell("g\xff"))

		// Every name Ls, Glob and Grep return reaches its own file.
		var listed []string
		for _, d := range []string{dir, dir + "/d\xfe"} {
			listed = append(listed, lsPaths(t, sb, d)...)
		}
		for name := range byteNames {
			assert.Contains(t, listed, dir+"/"+name)
		}
		for _, p := range listed {
			name := strings.TrimPrefix(p, dir+"/")
			if want, ok := byteNames[name]; ok {
				r, err := sb.Read(ctx, p)
				require.NoError(t, err, "%q", p)
				assert.Equal(t, want, r.Content, "%q", p)
			}
		}

		g, err := sb.Glob(ctx, "x\xff", dir)
		require.NoError(t, err)
		assert.Equal(t, []string{dir + "/x\xff"}, infoPaths(g.Matches), "a pattern matches byte for byte")
		g, err = sb.Glob(ctx, "in\xff", dir+"/d\xfe")
		require.NoError(t, err)
		assert.Equal(t, []string{dir + "/d\xfe/in\xff"}, infoPaths(g.Matches))
		g, err = sb.Glob(ctx, "in?", dir+"/d\xfe")
		require.NoError(t, err)
		assert.Len(t, g.Matches, 2, "? is one character, a byte that is not UTF-8 too")
		g, err = sb.Glob(ctx, "**", dir)
		require.NoError(t, err)
		for _, m := range g.Matches {
			name := strings.TrimPrefix(m.Path, dir+"/")
			if want, ok := byteNames[name]; ok {
				assert.Equal(t, want, string(download(t, sb, m.Path)), "%q", m.Path)
			}
		}
		assert.Len(t, g.Matches, len(byteNames)+1)

		gr, err := sb.Grep(ctx, "inner", dir)
		require.NoError(t, err)
		got := map[string]string{}
		for _, m := range gr.Matches {
			got[m.Path] = m.Text
		}
		assert.Equal(t, map[string]string{dir + "/d\xfe/in\xff": "inner", dir + "/d\xfe/in\uFFFD": "inner fffd"}, got)
		gr, err = sb.Grep(ctx, "\xff", dir)
		require.NoError(t, err)
		require.Len(t, gr.Matches, 1, "the pattern is bytes: U+FFFD is not \\xff")
		assert.Equal(t, sandbox.GrepMatch{Path: dir + "/g\xff", Line: 1, Text: "line \xff here"}, gr.Matches[0])
		gr, err = sb.Grep(ctx, "f", dir+"/x\xff")
		require.NoError(t, err)
		require.Len(t, gr.Matches, 1)
		assert.Equal(t, dir+"/x\xff", gr.Matches[0].Path)
		gr, err = sb.Grep(ctx, "in", dir, sandbox.GrepGlob("in\xff"))
		require.NoError(t, err)
		require.Len(t, gr.Matches, 1)
		assert.Equal(t, dir+"/d\xfe/in\xff", gr.Matches[0].Path)

		// A command's working directory is a name too.
		res, err := sb.Execute(ctx, "ls | grep -c in", sandbox.ExecDir(dir+"/d\xfe"))
		require.NoError(t, err)
		assert.Equal(t, "2\n", res.Output)
		res, err = sb.Execute(ctx, "cat "+shellQuote("x\xff"), sandbox.ExecDir(dir))
		require.NoError(t, err)
		assert.Equal(t, "ff", res.Output, "the command is bytes too")
	})
}

func infoPaths(infos []sandbox.FileInfo) []string {
	out := make([]string, len(infos))
	for i, fi := range infos {
		out[i] = fi.Path
	}
	return out
}

// TestByteNamesTransfer moves small files (through the helper) and large
// ones (through Docker's archive API, tar headers with raw names).
func TestByteNamesTransfer(t *testing.T) {
	t.Parallel()
	onEachImage(t, func(t *testing.T, sb *sandbox.Sandbox) {
		ctx := testCtx(t)
		dir := makeByteNames(t, sb)
		big := bytes.Repeat([]byte("big\xff"), 400<<10) // 1.6 MiB: past the helper's transfer size
		up, err := sb.UploadFiles(ctx, []sandbox.FileUpload{
			{Path: dir + "/x\xff", Content: []byte("up ff")},
			{Path: dir + "/d\xfe/in\xff", Content: big},
			{Path: dir + "/new\xfd/n\xfc", Content: big},
		})
		require.NoError(t, err)
		for _, r := range up {
			require.NoError(t, r.Err, "%q", r.Path)
		}
		assert.Equal(t, "up ff", shCat(t, sb, dir, "x\xff"))
		assert.Equal(t, fmt.Sprint(len(big)), mustSh(t, sb, "cd "+dir+" && wc -c < "+inShell("d\xfe/in\xff")+" | tr -d ' '"))
		assert.Equal(t, fmt.Sprint(len(big)), mustSh(t, sb, "cd "+dir+" && wc -c < "+inShell("new\xfd/n\xfc")+" | tr -d ' '"))
		checkOthers(t, sb, dir, "x\xff", "d\xfe/in\xff")
		assert.Equal(t, "2", mustSh(t, sb, "ls -a "+dir+"/"+inShell("d\xfe")+" | grep -c in"), "no temporary file left behind")

		// The first two by the helper, the last two by the archive API.
		mustSh(t, sb, "cd "+dir+" && cp "+inShell("d\xfe/in\xff")+" "+inShell("big\uFFFD"))
		down, err := sb.DownloadFiles(ctx, []string{dir + "/x\uFFFD", dir + "/x\xff", dir + "/d\xfe/in\xff", dir + "/big\uFFFD", dir + "/x\xfe"})
		require.NoError(t, err)
		require.Len(t, down, 5)
		for _, r := range down[:4] {
			require.NoError(t, r.Err, "%q", r.Path)
		}
		assert.Equal(t, "fffd", string(down[0].Content))
		assert.Equal(t, "up ff", string(down[1].Content))
		assert.True(t, bytes.Equal(big, down[2].Content), "big download of %q", down[2].Path)
		assert.True(t, bytes.Equal(big, down[3].Content), "big download of %q", down[3].Path)
		assert.ErrorIs(t, down[4].Err, fs.ErrNotExist)
	})
}
