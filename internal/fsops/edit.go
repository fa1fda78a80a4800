package fsops

import (
	"strings"
	"unicode/utf8"
)

// Edit applies a literal replacement to a file's bytes with deepagents 0.7
// rules: content that is not valid UTF-8 → ErrNotText; the candidates
// (old, new), (old, new with "\n"→"\r\n") and (old, new with "\r\n"→"\n")
// are tried in order and the first that occurs at least once wins (so LF
// text edits CRLF files); no occurrence → ErrStringNotFound; more than one
// without replaceAll → *OccurrencesError (matching ErrMultipleOccurrences).
// It returns the new bytes and the number of occurrences found. An empty old
// string is ErrStringNotFound unless content is empty, in which case new is
// inserted (count 1). Edit is a pure function and does no I/O.
func Edit(content []byte, old, new string, replaceAll bool) ([]byte, int, error) {
	if !utf8.Valid(content) {
		return nil, 0, ErrNotText
	}
	if old == "" {
		if len(content) == 0 {
			return []byte(new), 1, nil
		}
		return nil, 0, ErrStringNotFound
	}
	text := string(content)
	candidates := [][2]string{
		{old, new},
		{toCRLF(old), toCRLF(new)},
		{toLF(old), toLF(new)},
	}
	for i, c := range candidates {
		if i > 0 && c[0] == old {
			continue // the conversion changed nothing: already tried
		}
		count := strings.Count(text, c[0])
		if count == 0 {
			continue
		}
		if count > 1 && !replaceAll {
			return nil, count, &OccurrencesError{Count: count}
		}
		n := 1
		if replaceAll {
			n = -1
		}
		return []byte(strings.Replace(text, c[0], c[1], n)), count, nil
	}
	return nil, 0, ErrStringNotFound
}

// toCRLF turns every line ending into "\r\n" without doubling existing ones.
func toCRLF(s string) string {
	return strings.ReplaceAll(toLF(s), "\n", "\r\n")
}

// toLF turns every "\r\n" into "\n".
func toLF(s string) string {
	return strings.ReplaceAll(s, "\r\n", "\n")
}
