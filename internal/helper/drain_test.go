package helper

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dockersandbox/sandbox/internal/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A reader that first runs after its deadline passed (a loaded machine)
// still sends what the command wrote before it exited.
func TestPumpAfterDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	_, err = w.WriteString("written before exit\n")
	require.NoError(t, err)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))

	var got strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		pump(r, proto.KindStdout, func(_ proto.Kind, p []byte) error {
			got.Write(p)
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("pump did not return at its deadline while a writer keeps the pipe open")
	}
	w.Close()
	assert.Equal(t, "written before exit\n", got.String())
}
