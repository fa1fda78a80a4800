package bench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dockersandbox/sandbox/engine"
)

// engineExec runs argv with one plain Exec of eng in the sandbox id,
// copies its stdout to stdout, and returns once the process closed its
// output; its stderr (at most 4 KiB kept) is the error when it printed
// one.
func engineExec(ctx context.Context, eng engine.Engine, id string, stdout io.Writer, argv ...string) error {
	st, err := eng.Exec(ctx, id, argv, "")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CloseWrite(); err != nil {
		return err
	}
	errc := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(st.Stderr(), 4<<10))
		_, _ = io.Copy(io.Discard, st.Stderr())
		errc <- b
	}()
	if _, err := io.Copy(stdout, st.Stdout()); err != nil {
		return err
	}
	if msg := strings.TrimSpace(string(<-errc)); msg != "" {
		return fmt.Errorf("%s: %s", strings.Join(argv, " "), msg)
	}
	return nil
}
