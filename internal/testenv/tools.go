package testenv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/moby/moby/client"
)

// ToolsImage is DebianImage's base with the programs people fetch things
// with: curl, git, python3 with requests and pip, nodejs and npm, and
// ca-certificates; a user "sandbox" (uid 1000) with home /home/sandbox.
// Tests that need it call EnsureTools: the other packages' TestMain do not
// build it.
const ToolsImage = "dockersandbox-test/tools:bookworm"

// toolsImage is ToolsImage's recipe; its label is a hash of it, so that a
// change to the lists rebuilds it.
var toolsImage = func() debootstrapImage {
	img := debootstrapImage{ref: ToolsImage, cache: "tools-rootfs",
		include: []string{"python3", "python3-requests", "python3-pip", "git", "curl", "ca-certificates"},
		apt:     []string{"nodejs", "npm"},
		check:   "usr/bin/npm"}
	sum := sha256.Sum256([]byte(strings.Join(img.include, ",") + ";" + strings.Join(img.apt, ",") + ";" + img.check))
	img.recipe = fmt.Sprintf("tools-%s-1-%x", debianSuite, sum[:6])
	return img
}()

// EnsureTools makes sure ToolsImage exists, building it if it is absent
// or from another recipe: debootstrap (as root, from the Debian mirror of
// the host's apt sources) of the Debian packages, then apt-get in its
// rootfs for nodejs and npm. The root filesystem is cached under
// $XDG_CACHE_HOME (or ~/.cache)/dockersandbox/tools-rootfs.
func EnsureTools(ctx context.Context, cli *client.Client) error {
	unlock, err := lockTools(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return ensureDebootstrapped(ctx, cli, toolsImage)
}
