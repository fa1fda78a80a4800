package integration

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolsRequest is a request a tools upstream received.
type toolsRequest struct {
	Host, Method, Path, Auth, Agent string
}

// toolsUpstream is the servers of TestEgressTools: a file per path of
// each name, and every request they received.
type toolsUpstream struct {
	mu    sync.Mutex
	reqs  []toolsRequest
	files map[string][]byte // "host/path" → the body served
	git   http.Handler      // git.test's dumb HTTP repository
}

func (u *toolsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := strings.TrimSuffix(strings.TrimSuffix(r.Host, ":443"), ":80")
	u.mu.Lock()
	u.reqs = append(u.reqs, toolsRequest{host, r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("User-Agent")})
	u.mu.Unlock()
	if host == "git.test" {
		http.StripPrefix("/repo.git", u.git).ServeHTTP(w, r)
		return
	}
	if b, ok := u.files[host+r.URL.Path]; ok {
		w.Write(b)
		return
	}
	if host == "plain.test" || host == "api.test" {
		fmt.Fprintf(w, "%s %s authorization=%q\n", host, r.URL.Path, r.Header.Get("Authorization"))
		return
	}
	http.NotFound(w, r)
}

// saw returns the requests host received for path, whose User-Agent
// starts with agent, failing t if there is none.
func (u *toolsUpstream) saw(t *testing.T, host, path, agent string) []toolsRequest {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	var got []toolsRequest
	for _, r := range u.reqs {
		if r.Host == host && r.Path == path && strings.HasPrefix(r.Agent, agent) {
			got = append(got, r)
		}
	}
	if len(got) == 0 {
		t.Errorf("%s received no request for %s from %s; it received: %+v", host, path, agent, u.reqs)
	}
	return got
}

// demoWheel is a minimal valid wheel of package demo 1.0.
func demoWheel(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := []struct{ name, body string }{
		{"demo/__init__.py", "GREETING = 'hello from the egress test'\n"},
		{"demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nSummary: a wheel behind the egress\n"},
		{"demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: dockersandbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		require.NoError(t, err)
		_, err = w.Write([]byte(f.body))
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("demo-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("demo-1.0.dist-info/RECORD")
	require.NoError(t, err)
	_, err = w.Write([]byte(record.String()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// bareRepo makes a bare git repository on the host, with one commit of a
// README holding readme, that git serves over dumb HTTP: its directory.
func bareRepo(t *testing.T, readme string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed on the host to make the test's repository: %v", err)
	}
	dir := t.TempDir()
	work, bare := filepath.Join(dir, "work"), filepath.Join(dir, "repo.git")
	git := func(in string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = in
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.invalid",
			"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.invalid")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	}
	require.NoError(t, os.Mkdir(work, 0o755))
	git(work, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "README"), []byte(readme), 0o644))
	git(work, "add", "README")
	git(work, "commit", "-q", "-m", "first")
	git(dir, "clone", "-q", "--bare", work, bare)
	git(bare, "update-server-info")
	return bare
}

// Real programs, run as a user would with nothing but the sandbox's
// environment (no proxy flag, no CA option), reach what the egress policy
// allows through its proxy: curl, Python's urllib and requests, pip, git
// and npm. Over HTTPS the egress terminates their TLS to add a
// credential: each program trusts the sandbox's CA, and the server
// receives the credential and the program's own request. A name the
// policy does not allow fails each of them with the proxy's 403.
func TestEgressTools(t *testing.T) {
	skipInShort(t)
	t.Parallel()
	cli := testenv.Client(t)
	bctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	require.NoError(t, testenv.EnsureTools(bctx, cli))

	const secret = "Bearer egress-tools-s3cr3t"
	const readme = "a repository behind the egress\n"
	const description = "a package behind the egress"
	wheel := demoWheel(t)
	wheelSum := sha256.Sum256(wheel)
	packument, err := json.Marshal(map[string]any{
		"name":      "demo",
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "demo", "version": "1.0.0", "description": description,
			"dist": map[string]string{"tarball": "https://registry.test/demo/-/demo-1.0.0.tgz", "shasum": strings.Repeat("0", 40)},
		}},
		"time": map[string]string{"created": "2026-01-01T00:00:00.000Z", "modified": "2026-01-01T00:00:00.000Z", "1.0.0": "2026-01-01T00:00:00.000Z"},
	})
	require.NoError(t, err)
	up := &toolsUpstream{
		files: map[string][]byte{
			"pypi.test/simple/demo/": fmt.Appendf(nil, "<!DOCTYPE html>\n<html><body>\n"+
				"<a href=\"/files/demo-1.0-py3-none-any.whl#sha256=%x\">demo-1.0-py3-none-any.whl</a>\n</body></html>\n", wheelSum),
			"pypi.test/files/demo-1.0-py3-none-any.whl": wheel,
			"registry.test/demo":                        packument,
		},
		git: http.FileServer(http.Dir(bareRepo(t, readme))),
	}
	httpsNames := []string{"api.test", "pypi.test", "git.test", "registry.test"}
	tlsSrv, pool := testTLSServer(t, up, httpsNames...)
	plain := httptest.NewServer(up)
	t.Cleanup(plain.Close)

	f := newEgressFixture(t)
	f.names["plain.test:80"] = plain.Listener.Addr().String()
	for _, n := range httpsNames {
		f.names[n+":443"] = tlsSrv.Listener.Addr().String()
	}
	p := f.policy(append([]string{"plain.test"}, httpsNames...)...)
	p.TLSConfig = &tls.Config{RootCAs: pool}
	for _, n := range httpsNames {
		p.Credentials = append(p.Credentials, sandbox.EgressCredential{Host: n, Header: "Authorization", Value: secret})
	}
	sb := newSandbox(t, testenv.ToolsImage, sandbox.WithUser("sandbox"), sandbox.WithEgress(p))

	// run runs command in a directory of its own as the sandbox's user.
	// (Under the secure profile the root filesystem is read-only: npm's
	// cache goes to /tmp, as its user would put it.)
	opts := []sandbox.ExecOption{sandbox.ExecTimeout(2 * time.Minute)}
	if secureProfile() {
		opts = append(opts, sandbox.ExecEnv("HOME=/tmp"))
	}
	run := func(t *testing.T, command string) (string, int) {
		t.Helper()
		res, err := sb.Execute(testCtx(t), `cd "$(mktemp -d)" && `+command, opts...)
		require.NoError(t, err, "command: %s", command)
		return res.Output, res.ExitCode
	}
	// ok runs command, which must succeed, and returns its output.
	ok := func(t *testing.T, command string) string {
		t.Helper()
		out, code := run(t, command)
		require.Equal(t, 0, code, "command: %s\noutput:\n%s", command, out)
		return out
	}
	// denied runs command, which must fail on the proxy's 403.
	denied := func(t *testing.T, command string) {
		t.Helper()
		out, code := run(t, command)
		assert.NotEqual(t, 0, code, "a name the policy does not allow: %s\noutput:\n%s", command, out)
		assert.Contains(t, out, "403", "the proxy's answer reaches the user: %s\noutput:\n%s", command, out)
		t.Logf("denied as the user sees it: %s\n%s", command, out)
	}
	authorized := fmt.Sprintf("authorization=%q", secret)

	t.Run("curl", func(t *testing.T) {
		assert.Equal(t, "plain.test /curl authorization=\"\"\n", ok(t, "curl -sS http://plain.test/curl"))
		assert.Equal(t, "api.test /curl "+authorized+"\n", ok(t, "curl -sS https://api.test/curl"))
		for _, r := range up.saw(t, "api.test", "/curl", "curl/") {
			assert.Equal(t, secret, r.Auth)
		}
		denied(t, "curl -sS https://denied.test/")
	})
	t.Run("urllib", func(t *testing.T) {
		get := `python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode(), end="")' `
		assert.Equal(t, "plain.test /urllib authorization=\"\"\n", ok(t, get+"http://plain.test/urllib"))
		assert.Equal(t, "api.test /urllib "+authorized+"\n", ok(t, get+"https://api.test/urllib"))
		for _, r := range up.saw(t, "api.test", "/urllib", "Python-urllib/") {
			assert.Equal(t, secret, r.Auth)
		}
		denied(t, get+"https://denied.test/")
	})
	t.Run("requests", func(t *testing.T) {
		get := `python3 -c 'import sys, requests; r = requests.get(sys.argv[1]); r.raise_for_status(); print(r.text, end="")' `
		assert.Equal(t, "api.test /requests "+authorized+"\n", ok(t, get+"https://api.test/requests"))
		for _, r := range up.saw(t, "api.test", "/requests", "python-requests/") {
			assert.Equal(t, secret, r.Auth)
		}
		denied(t, get+"https://denied.test/")
	})
	t.Run("pip", func(t *testing.T) {
		out := ok(t, "pip download --no-deps --index-url https://pypi.test/simple/ demo && sha256sum demo-1.0-py3-none-any.whl")
		assert.Contains(t, out, "Saved ./demo-1.0-py3-none-any.whl")
		assert.Contains(t, out, fmt.Sprintf("%x  demo-1.0-py3-none-any.whl", wheelSum), "the wheel served")
		for _, path := range []string{"/simple/demo/", "/files/demo-1.0-py3-none-any.whl"} {
			for _, r := range up.saw(t, "pypi.test", path, "pip/") {
				assert.Equal(t, secret, r.Auth)
			}
		}
		// (--retries 1: pip says why only when it retries, and retries
		// five times by default.)
		denied(t, "pip download --retries 1 --no-deps --index-url https://denied.test/simple/ demo")
	})
	t.Run("git", func(t *testing.T) {
		assert.Equal(t, readme, ok(t, "git clone -q https://git.test/repo.git && cat repo/README"))
		for _, path := range []string{"/repo.git/info/refs", "/repo.git/HEAD"} {
			for _, r := range up.saw(t, "git.test", path, "git/") {
				assert.Equal(t, secret, r.Auth)
			}
		}
		denied(t, "git clone -q https://denied.test/repo.git")
	})
	t.Run("npm", func(t *testing.T) {
		assert.Equal(t, description+"\n", ok(t, "npm view demo description --registry https://registry.test/"))
		for _, r := range up.saw(t, "registry.test", "/demo", "npm/") {
			assert.Equal(t, secret, r.Auth)
		}
		denied(t, "npm view demo description --registry https://denied.test/")
	})

	// Without the variables, the programs find the CA in the system store
	// (where the root filesystem is writable: not under the secure profile).
	t.Run("system store", func(t *testing.T) {
		if secureProfile() {
			t.Skip("the secure profile's root filesystem is read-only: the CA is in the variables only")
		}
		const unset = "env -u SSL_CERT_FILE -u REQUESTS_CA_BUNDLE -u CURL_CA_BUNDLE -u GIT_SSL_CAINFO -u NODE_EXTRA_CA_CERTS "
		assert.Equal(t, "api.test /store-curl "+authorized+"\n", ok(t, unset+"curl -sS https://api.test/store-curl"))
		assert.Equal(t, "api.test /store-python "+authorized+"\n", ok(t, unset+
			`python3 -c 'import requests; print(requests.get("https://api.test/store-python").text, end="")'`))
		assert.Equal(t, readme, ok(t, unset+"git clone -q https://git.test/repo.git && cat repo/README"))
		assert.Equal(t, description+"\n", ok(t, unset+"npm view demo description --registry https://registry.test/"))
	})

	assert.False(t, f.eventFor(t, "denied.test", 443).Allowed)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.dialed {
		assert.NotContains(t, d, "denied.test", "a denied name is never dialed")
	}
}
