package tools

import (
	"path"
	"strings"
)

// resolve validates a path from the model like deepagents' validate_path
// and makes it absolute. It rejects a ".." component and a leading "~"
// ("Error: Path traversal not allowed: p") and Windows drive paths. A
// backslash counts as "/". An absolute path is cleaned; a relative one,
// including a bare name and "", is resolved against the sandbox's working
// directory. (deepagents puts a bare "main.py" at "/main.py"; here it is
// "<working dir>/main.py", where the execute tool's commands run too.)
// The second result is the error text for the model.
func (e *env) resolve(p string) (string, string) {
	slashed := strings.ReplaceAll(p, `\`, "/")
	if strings.HasPrefix(p, "~") || hasDotDot(slashed) {
		return "", "Error: Path traversal not allowed: " + showArg(p)
	}
	if len(p) >= 2 && p[1] == ':' && isASCIILetter(p[0]) {
		return "", "Error: Windows absolute paths are not supported: " + showArg(p) +
			". Please use virtual paths starting with / (e.g., /workspace/file.txt)"
	}
	if path.IsAbs(slashed) {
		return path.Clean(slashed), ""
	}
	return path.Join(e.wd, slashed), ""
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
