package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// leakHelperEnv makes the test binary act as a child that leaks a container
// (see TestMainReportsLeaks); its value labels that container.
const leakHelperEnv = "TESTENV_LEAK_HELPER_NONCE"

const labelNonce = "com.dockersandbox.testenv.nonce"

func TestMain(m *testing.M) { Main(m) }

func nonce(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// create creates (without starting) a container and removes it at the end
// of the test.
func create(t *testing.T, cli *client.Client, cfg *container.Config) string {
	t.Helper()
	ctx := context.Background()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg})
	if err != nil {
		t.Fatalf("creating container from %s: %v", cfg.Image, err)
	}
	t.Cleanup(func() {
		_, err := cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil {
			t.Errorf("removing container %s: %v", res.ID, err)
		}
	})
	return res.ID
}

// run runs cmd in a new container of image as user and returns its exit
// code and combined output.
func run(t *testing.T, cli *client.Client, image, user string, cmd ...string) (int64, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := create(t, cli, &container.Config{
		Image:  image,
		User:   user,
		Cmd:    cmd,
		Labels: map[string]string{LabelSandbox: "true", LabelOwner: Owner()},
	})
	wait := cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("starting %v in %s: %v", cmd, image, err)
	}
	var code int64
	select {
	case res := <-wait.Result:
		if res.Error != nil {
			t.Fatalf("waiting for %v in %s: %s", cmd, image, res.Error.Message)
		}
		code = res.StatusCode
	case err := <-wait.Error:
		t.Fatalf("waiting for %v in %s: %v", cmd, image, err)
	}
	logs, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs of %v in %s: %v", cmd, image, err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		t.Fatalf("reading logs of %v in %s: %v", cmd, image, err)
	}
	return code, out.String()
}

func expect(t *testing.T, cli *client.Client, image, user, want string, cmd ...string) {
	t.Helper()
	code, out := run(t, cli, image, user, cmd...)
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("%s as %q: %q: exit %d, output %q; want exit 0, output %q", image, user, cmd, code, out, want)
	}
}

func TestImagesRun(t *testing.T) {
	cli := Client(t)
	if err := EnsureImages(context.Background(), cli); err != nil { // already done by Main: must be a cheap no-op
		t.Fatal(err)
	}
	for _, image := range []string{BusyboxImage, DebianImage} {
		t.Run(image, func(t *testing.T) {
			expect(t, cli, image, "", "ok", "/bin/sh", "-c", "echo ok")
			expect(t, cli, image, "", "1000 1000 1000 /home/sandbox", "/bin/sh", "-c",
				`echo $(id -u sandbox) $(id -g sandbox) $(ls -dn /home/sandbox | awk '{print $3}')`+" ~sandbox")
			expect(t, cli, image, "sandbox", "1000 /home/sandbox ok", "/bin/sh", "-c",
				`cd && touch f && echo $(id -u) $HOME ok`)
			expect(t, cli, image, "nobody", "65534", "/usr/bin/env", "sh", "-c", "id -u")
			expect(t, cli, image, "", "1777", "/bin/sh", "-c", "stat -c %a /tmp")
			if code, _ := run(t, cli, image, "", "/bin/sh", "-c", "exit 3"); code != 3 {
				t.Errorf("exit code = %d, want 3", code)
			}
		})
	}
	expect(t, cli, DebianImage, "sandbox", "1", "python3", "-c", "print(1)")
}

func TestOwner(t *testing.T) {
	host, _ := os.Hostname()
	if got, want := Owner(), host+":"+strconv.Itoa(os.Getpid()); got != want {
		t.Errorf("Owner() = %q, want %q", got, want)
	}
}

func TestLeaked(t *testing.T) {
	cli := Client(t)
	ctx := context.Background()
	n := nonce(t)
	ownerA, ownerB := "testenv-fake-a:"+n, "testenv-fake-b:"+n
	idA := create(t, cli, &container.Config{Image: BusyboxImage, Labels: map[string]string{LabelSandbox: "true", LabelOwner: ownerA}})
	idB := create(t, cli, &container.Config{Image: BusyboxImage, Labels: map[string]string{LabelSandbox: "true", LabelOwner: ownerB}})
	for owner, want := range map[string][]string{ownerA: {idA}, ownerB: {idB}, "testenv-fake-none:" + n: {}} {
		got, err := Leaked(ctx, cli, owner)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Leaked(%q) = %v, want %v", owner, got, want)
		}
	}
}

// TestMainReportsLeaks runs this test binary as a child whose only test
// leaks a container, and checks that Main removes it and fails the run.
func TestMainReportsLeaks(t *testing.T) {
	if os.Getenv(leakHelperEnv) != "" {
		t.Skip("running as the leak helper child")
	}
	cli := Client(t)
	ctx := context.Background()
	n := nonce(t)
	byNonce := make(client.Filters).Add("label", labelNonce+"="+n)
	t.Cleanup(func() { // in case Main did not remove it
		res, _ := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: byNonce})
		for _, c := range res.Items {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		}
	})

	cmd := exec.Command(os.Args[0], "-test.run=^TestLeakHelperChild$", "-test.v")
	cmd.Env = append(os.Environ(), leakHelperEnv+"="+n)
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("child: want a non-zero exit, got %v; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestLeakHelperChild") {
		t.Errorf("child test did not pass; output:\n%s", out)
	}
	if !strings.Contains(string(out), "leaked by this test process") {
		t.Errorf("child did not report the leak; output:\n%s", out)
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: byNonce})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 0 {
		t.Errorf("leaked container was not removed: %s", res.Items[0].ID)
	}
}

// TestLeakHelperChild leaks a container on purpose when run as the child
// of TestMainReportsLeaks.
func TestLeakHelperChild(t *testing.T) {
	n := os.Getenv(leakHelperEnv)
	if n == "" {
		t.Skip("only run as a child of TestMainReportsLeaks")
	}
	cli := Client(t)
	res, err := cli.ContainerCreate(context.Background(), client.ContainerCreateOptions{Config: &container.Config{
		Image:  BusyboxImage,
		Labels: map[string]string{LabelSandbox: "true", LabelOwner: Owner(), labelNonce: n},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("leaking container %s", res.ID)
}

func TestBusyboxRootfs(t *testing.T) {
	b, err := busyboxRootfs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
	}
	check := func(name string, ok func(h *tar.Header) bool) {
		t.Helper()
		if h := entries[name]; h == nil || !ok(h) {
			t.Errorf("rootfs entry %s: bad or missing: %+v", name, h)
		}
	}
	check("bin/busybox", func(h *tar.Header) bool { return h.Typeflag == tar.TypeReg && h.Mode == 0o755 })
	check("bin/sh", func(h *tar.Header) bool { return h.Typeflag == tar.TypeSymlink && h.Linkname == "busybox" })
	check("usr/bin/env", func(h *tar.Header) bool { return h.Linkname == "/bin/busybox" })
	check("tmp/", func(h *tar.Header) bool { return h.Mode == 0o1777 })
	check("home/sandbox/", func(h *tar.Header) bool { return h.Uid == 1000 && h.Gid == 1000 })
	check("etc/passwd", func(h *tar.Header) bool { return h.Size > 0 })
	check("etc/group", func(h *tar.Header) bool { return h.Size > 0 })
}
