//go:build !unix

package testenv

import "context"

// lockFile is a no-op where flock is unavailable; the images can only be
// built on Linux anyway.
func lockFile(ctx context.Context, path string) (release func(), err error) {
	return func() {}, nil
}
