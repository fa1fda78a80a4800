// Command helperimage writes the sandbox helper image as an OCI archive
// (linux/amd64 and linux/arm64 in one index), from the helper binaries
// embedded in the library:
//
//	go run github.com/dockersandbox/sandbox/k8s/cmd/helperimage -o helper.tar
//	go run github.com/dockersandbox/sandbox/k8s/cmd/helperimage -tag   # prints the tag the engine expects
//
// Push it to a registry the cluster pulls from, e.g. with skopeo or crane:
//
//	skopeo copy --all oci-archive:helper.tar docker://registry.example.com/dockersandbox/helper:$(go run .../helperimage -tag)
//	crane push helper.tar registry.example.com/dockersandbox/helper:$(go run .../helperimage -tag)
//
// and give the engine that repository (k8s.WithHelperImage).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/dockersandbox/sandbox/k8s/helperimage"
)

func main() {
	out := flag.String("o", "helper.tar", "the OCI archive to write (- for stdout)")
	repo := flag.String("repo", helperimage.Repository, "the image's repository name; the tag is always the helper's")
	tagOnly := flag.Bool("tag", false, "print the tag (and the full reference on stderr) and exit")
	flag.Parse()
	if *tagOnly {
		fmt.Println(helperimage.Tag())
		fmt.Fprintln(os.Stderr, helperimage.Ref(*repo))
		return
	}
	f := os.Stdout
	if *out != "-" {
		var err error
		if f, err = os.Create(*out); err != nil {
			fmt.Fprintln(os.Stderr, "helperimage:", err)
			os.Exit(1)
		}
	}
	w := bufio.NewWriter(f)
	err := helperimage.WriteOCI(w, helperimage.Ref(*repo))
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil && *out != "-" {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helperimage:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "helperimage: wrote", helperimage.Ref(*repo), "to", *out)
}
