package integration

import (
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/sandboxtest"
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

// skipInShort skips, in -short mode, a long test: an attack by the
// container (as root, with the default profile's capabilities) or a
// private daemon, or a test at scale. CI runs them on Docker only: the
// library's code under attack is the same on every engine, and no other
// stage arms the attacker more (the secure profile takes privileges from
// it, TLS changes only the way to the daemon). The attacks whose outcome
// is the engine's or the runtime's skip with skipInShortOnDocker and
// skipInShortOnRunc instead (TESTING.md, "What CI runs, and where").
func skipInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long, and its attacker the container: runs without -short (CI: on Docker)")
	}
}

// skipInShortOnDocker skips, in -short mode, a long attack whose outcome
// is the engine's (an OOM kill, a full disk, a crash between two daemon
// calls, detached processes, the host's memory), unless the suite runs on
// Podman or under gVisor: their CI stages run -short and these with it;
// Docker's runs them without -short.
func skipInShortOnDocker(t *testing.T) {
	t.Helper()
	if testing.Short() && !sandboxtest.GVisor() && !testenv.Podman(t) {
		t.Skip("long, and the engine's: runs without -short, and with it on Podman and under gVisor")
	}
}

// skipInShortOnRunc is skipInShortOnDocker for an attack whose outcome is
// the OCI runtime's: -short runs it under gVisor only.
func skipInShortOnRunc(t *testing.T) {
	t.Helper()
	if testing.Short() && !sandboxtest.GVisor() {
		t.Skip("long, and the runtime's: runs without -short, and with it under gVisor")
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
