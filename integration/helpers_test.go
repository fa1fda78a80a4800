package integration

import (
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/require"
)

// Shared helpers of the file, path and transfer tests.

// imageName is the short name of a test image, used as a subtest name:
// "dockersandbox-test/busybox:1" → "busybox".
func imageName(image string) string {
	name, _, _ := strings.Cut(path.Base(image), ":")
	return name
}

// onEachImage runs fn in a parallel subtest per test image, each with its
// own sandbox (created with opts) that fn's subtests share.
func onEachImage(t *testing.T, fn func(t *testing.T, sb *sandbox.Sandbox), opts ...sandbox.Option) {
	t.Helper()
	for _, image := range images {
		t.Run(imageName(image), func(t *testing.T) {
			t.Parallel()
			fn(t, newSandbox(t, image, opts...))
		})
	}
}

var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// testDir returns a directory path under the working directory that is
// unique to t (it is not created).
func testDir(t testing.TB) string {
	return "/workspace/" + unsafeInName.ReplaceAllString(t.Name(), "_")
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// mustSh runs command in the sandbox, requires exit status 0 and returns
// the output without its trailing newline.
func mustSh(t testing.TB, sb *sandbox.Sandbox, command string, opts ...sandbox.ExecOption) string {
	t.Helper()
	res, err := sb.Execute(testCtx(t), command, opts...)
	require.NoError(t, err, "command: %s", command)
	require.Equal(t, 0, res.ExitCode, "command: %s\noutput: %s", command, res.Output)
	return strings.TrimSuffix(res.Output, "\n")
}

// mustWrite writes content to p.
func mustWrite(t testing.TB, sb *sandbox.Sandbox, p string, content string) {
	t.Helper()
	require.NoError(t, sb.Write(testCtx(t), p, []byte(content)), "write %q", p)
}

// writeTree writes files (relative path → content) under dir.
func writeTree(t testing.TB, sb *sandbox.Sandbox, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mustWrite(t, sb, dir+"/"+name, content)
	}
}

// download returns the exact bytes of the file at p.
func download(t testing.TB, sb *sandbox.Sandbox, p string) []byte {
	t.Helper()
	res, err := sb.DownloadFiles(testCtx(t), []string{p})
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err, "download %q", p)
	return res[0].Content
}

// lsPaths returns the paths Ls lists in dir.
func lsPaths(t testing.TB, sb *sandbox.Sandbox, dir string) []string {
	t.Helper()
	infos, err := sb.Ls(testCtx(t), dir)
	require.NoError(t, err, "ls %q", dir)
	out := make([]string, len(infos))
	for i, fi := range infos {
		out[i] = fi.Path
	}
	return out
}

// absAll prefixes each relative name with dir.
func absAll(dir string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = dir + "/" + n
	}
	return out
}

// skipInShort skips a long test, in -short mode, whose attacker is the
// container or a private daemon, not the connection to the daemon. CI's
// TLS stage runs -short: a second dockerd reached over TCP with mutual TLS
// changes how the library reaches its daemon, nothing inside a container;
// the Docker, secure-profile and Podman stages run these tests in full.
func skipInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long, and independent of how the daemon is reached: runs without -short")
	}
}

// builtTools are the binaries toolBinary built, by package and tags.
var builtTools struct {
	sync.Mutex
	bin map[string][]byte
}

// toolBinary returns the binary of pkg, a main package of the module
// (testenv.BuildTool), built with tags once per test process.
func toolBinary(t *testing.T, pkg string, tags ...string) []byte {
	t.Helper()
	key := strings.Join(append([]string{pkg}, tags...), " ")
	builtTools.Lock()
	defer builtTools.Unlock()
	if b, ok := builtTools.bin[key]; ok {
		return b
	}
	b, err := os.ReadFile(testenv.BuildTool(t, "..", pkg, tags...))
	require.NoError(t, err)
	if builtTools.bin == nil {
		builtTools.bin = map[string][]byte{}
	}
	builtTools.bin[key] = b
	return b
}
