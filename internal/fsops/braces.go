package fsops

// braceNode is a literal (alts == nil) or a brace group of alternatives.
type braceNode struct {
	lit  string
	alts [][]braceNode
}

// expandBraces expands "{a,b}" groups (nested ones too) like a shell: a
// group needs a top-level comma, otherwise its braces are literal; an
// unmatched brace is literal. More than limit results → ErrPatternTooBroad.
func expandBraces(s string, limit int) ([]string, error) {
	match := make([]int, len(s))
	var stack []int
	for i := 0; i < len(s); i++ {
		match[i] = -1
		switch s[i] {
		case '{':
			stack = append(stack, i)
		case '}':
			if n := len(stack); n > 0 {
				match[stack[n-1]] = i
				stack = stack[:n-1]
			}
		}
	}
	seq := parseBraceSeq(s, 0, len(s), match)
	if countBraceSeq(seq, limit) > limit {
		return nil, ErrPatternTooBroad
	}
	return expandBraceSeq(seq), nil
}

// parseBraceSeq parses s[lo:hi]; match maps each "{" to its "}" or -1.
func parseBraceSeq(s string, lo, hi int, match []int) []braceNode {
	var out []braceNode
	start := lo
	flush := func(end int) {
		if end > start {
			out = append(out, braceNode{lit: s[start:end]})
		}
	}
	for i := lo; i < hi; {
		end := match[i]
		if s[i] != '{' || end < 0 || end >= hi {
			i++
			continue
		}
		flush(i)
		var cuts []int // top-level commas
		for k := i + 1; k < end; k++ {
			if s[k] == '{' && match[k] > k {
				k = match[k]
			} else if s[k] == ',' {
				cuts = append(cuts, k)
			}
		}
		if len(cuts) == 0 {
			out = append(out, braceNode{lit: "{"})
			out = append(out, parseBraceSeq(s, i+1, end, match)...)
			out = append(out, braceNode{lit: "}"})
		} else {
			g := braceNode{}
			from := i + 1
			for _, c := range append(cuts, end) {
				g.alts = append(g.alts, parseBraceSeq(s, from, c, match))
				from = c + 1
			}
			out = append(out, g)
		}
		i = end + 1
		start = i
	}
	flush(hi)
	return out
}

// countBraceSeq returns the number of expansions of seq, capped at limit+1.
func countBraceSeq(seq []braceNode, limit int) int {
	n := 1
	for _, nd := range seq {
		if nd.alts == nil {
			continue
		}
		c := 0
		for _, a := range nd.alts {
			c += countBraceSeq(a, limit)
			if c > limit {
				return limit + 1
			}
		}
		if n *= c; n > limit {
			return limit + 1
		}
	}
	return n
}

// expandBraceSeq returns every expansion of seq.
func expandBraceSeq(seq []braceNode) []string {
	out := []string{""}
	for _, nd := range seq {
		if nd.alts == nil {
			for i := range out {
				out[i] += nd.lit
			}
			continue
		}
		var opts []string
		for _, a := range nd.alts {
			opts = append(opts, expandBraceSeq(a)...)
		}
		next := make([]string, 0, len(out)*len(opts))
		for _, o := range out {
			for _, p := range opts {
				next = append(next, o+p)
			}
		}
		out = next
	}
	return out
}
