package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dockersandbox/sandbox"
)

// cp copies one file between the host and a sandbox; "ID:PATH" names the
// sandbox side, "-" is stdin or stdout.
func cp(ctx context.Context, args []string) error {
	fs := newFlags("cp", "[-q] [-json] SRC DST  (one side ID:PATH)")
	quiet := fs.Bool("q", false, "no progress line on stderr")
	asJSON := fs.Bool("json", false, `print {"src", "dst", "bytes"} as JSON (not with DST -)`)
	choice := engineFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("%w: cp needs SRC and DST", errUsage)
	}
	src, dst := fs.Arg(0), fs.Arg(1)
	srcID, srcPath, srcIn := splitRef(src)
	dstID, dstPath, dstIn := splitRef(dst)
	if srcIn == dstIn {
		return fmt.Errorf("%w: exactly one of SRC and DST must be ID:PATH", errUsage)
	}
	eng, done, err := connect(ctx, choice)
	if err != nil {
		return err
	}
	defer done()
	start := time.Now()
	var n int
	switch {
	case *asJSON && dst == "-":
		return fmt.Errorf("%w: -json prints on stdout: DST - would mix the file into it", errUsage)
	case dstIn: // upload
		content, err := readLocal(src)
		if err != nil {
			return err
		}
		sb, err := attach(ctx, eng, dstID, sandbox.WithAutoRemove(false))
		if err != nil {
			return err
		}
		res, err := sb.UploadFiles(ctx, []sandbox.FileUpload{{Path: dstPath, Content: content}})
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			return err
		}
		n = len(content)
	default: // download
		sb, err := attach(ctx, eng, srcID, sandbox.WithAutoRemove(false))
		if err != nil {
			return err
		}
		res, err := sb.DownloadFiles(ctx, []string{srcPath})
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			return err
		}
		if err := writeLocal(dst, res[0].Content); err != nil {
			return err
		}
		n = len(res[0].Content)
	}
	if *asJSON {
		return printJSON(os.Stdout, cpResult{Src: src, Dst: dst, Bytes: n})
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "copied %d bytes in %v\n", n, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// cpResult is what cp -json prints.
type cpResult struct {
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Bytes int    `json:"bytes"`
}

// splitRef splits "ID:PATH"; a local path has no colon before its first slash.
func splitRef(s string) (id, path string, inSandbox bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 || strings.Contains(s[:i], "/") {
		return "", s, false
	}
	return s[:i], s[i+1:], true
}

func readLocal(p string) ([]byte, error) {
	if p == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(p)
}

func writeLocal(p string, content []byte) error {
	if p == "-" {
		_, err := os.Stdout.Write(content)
		return err
	}
	return os.WriteFile(p, content, 0o644)
}
