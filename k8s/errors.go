package k8s

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/dockersandbox/sandbox/engine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// mapErr wraps an error of the API server or of the connection to it with
// the engine's sentinels: a missing object is engine.ErrNotFound; a
// connection refused, reset or timed out, or a name that does not
// resolve, engine.ErrUnreachable; ctx's own end is ctx's error.
func mapErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %w", engine.ErrNotFound, err)
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") {
		return fmt.Errorf("%w: %w", engine.ErrUnreachable, err)
	}
	return err
}
