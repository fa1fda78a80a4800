package integration

import (
	"context"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox"
	"github.com/dockersandbox/sandbox/engine"
	"github.com/dockersandbox/sandbox/internal/testenv"
)

// testEngine returns the engine the tests run on: the relayed one
// (DOCKERSANDBOX_TEST_ENGINE), else the Docker engine of the environment,
// closed at the test's end. Tests look at sandboxes through it where what
// they check is not Docker's alone (labels, state, removal).
func testEngine(t testing.TB) engine.Engine {
	t.Helper()
	if e := testenv.Engine(); e != nil {
		return e
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := sandbox.DockerEngine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// inspectBox describes the sandbox id through testEngine.
func inspectBox(t testing.TB, id string) (engine.Info, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return testEngine(t).Inspect(ctx, id)
}

// removeBox removes the sandbox id behind the library's back, through
// testEngine.
func removeBox(t testing.TB, id string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return testEngine(t).Remove(ctx, id)
}

// requirePauser skips t on an engine that cannot pause (Kubernetes has no
// freezer in its API).
func requirePauser(t testing.TB) {
	t.Helper()
	if e := testenv.Engine(); e != nil {
		if _, ok := e.(engine.Pauser); !ok {
			t.Skipf("the %s engine cannot pause (no engine.Pauser): Pause is errors.ErrUnsupported there", e.Name())
		}
	}
}

// requireStopper skips t on an engine that cannot stop and start a
// sandbox again (a pod cannot restart its container with the same PID 1).
func requireStopper(t testing.TB) {
	t.Helper()
	if e := testenv.Engine(); e != nil {
		if _, ok := e.(engine.Stopper); !ok {
			t.Skipf("the %s engine cannot stop and start a sandbox (no engine.Stopper): Stop/Restart are errors.ErrUnsupported there", e.Name())
		}
	}
}

// requireExecAs skips t where commands run as a user other than the
// sandbox's (ExecUser, Cmd.User) are not served: on Kubernetes a pod's
// processes all run as its user (k8s refuses with errors.ErrUnsupported).
func requireExecAs(t testing.TB) {
	t.Helper()
	testenv.RequireDocker(t, "a command as another user than the sandbox's (ExecUser): a pod's processes all run as its user")
}

// sandboxUser is the test images' user "sandbox" (uid 1000) as the engine
// takes it: by name on Docker, by number elsewhere (a pod runs as a
// numeric uid only).
func sandboxUser() sandbox.Option {
	if testenv.Relayed() {
		return sandbox.WithUser("1000:1000")
	}
	return sandbox.WithUser("sandbox")
}
