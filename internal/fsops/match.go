package fsops

import (
	"path"
	"strings"
)

const (
	// maxBraceAlternatives bounds brace expansion (deepagents 0.7).
	maxBraceAlternatives = 1000
	// maxPatternLen bounds a glob pattern so that its expansion stays small.
	maxPatternLen = 4096
)

// MatchPath reports whether the root-relative slash path rel matches the
// glob pattern with the rules of Glob: a pattern without "/" matches the
// base name; one with "/" matches rel segment by segment. A leading "/" on
// rel is ignored.
func MatchPath(pattern, rel string) (bool, error) {
	p, err := compilePattern(pattern)
	if err != nil {
		return false, err
	}
	return p.match(strings.TrimLeft(rel, "/")), nil
}

// globPattern is a compiled glob: any of its brace alternatives may match.
type globPattern struct {
	alts []altPattern
}

// altPattern is one brace alternative.
type altPattern struct {
	base  bool      // no "/": segs[0] matches the base name at any depth
	never bool      // ends with "/": names directories only, matches no file
	segs  []segment // path segments (a single one when base)
}

// segment is one compiled path segment pattern.
type segment struct {
	star2 bool // "**": zero or more segments, none of them hidden (unless anyDot)
	dot   bool // starts with ".", so it may match hidden names
	// anyDot lets the segment match hidden names whatever it starts with
	// (grep's file filter; see compileFilter).
	anyDot bool
	toks   []token
}

type tokenKind uint8

const (
	tLit tokenKind = iota
	tAny
	tStar
	tClass
)

// token is one element of a segment pattern.
type token struct {
	kind   tokenKind
	r      rune
	neg    bool
	ranges [][2]rune // tClass members, inclusive
}

// compilePattern validates, brace-expands and compiles a glob pattern.
func compilePattern(pattern string) (*globPattern, error) {
	if pattern == "" || len(pattern) > maxPatternLen {
		return nil, ErrInvalidPattern
	}
	exps, err := expandBraces(pattern, maxBraceAlternatives)
	if err != nil {
		return nil, err
	}
	p := &globPattern{alts: make([]altPattern, 0, len(exps))}
	for _, e := range exps {
		a, err := compileAlt(e)
		if err != nil {
			return nil, err
		}
		p.alts = append(p.alts, a)
	}
	return p, nil
}

// compileFilter compiles a file filter of Grep: Glob's rules, except that
// wildcards also match a leading "." (fnmatch without FNM_PERIOD, as GNU
// grep's --include, which deepagents uses, matches: "*.go" selects
// ".hidden.go", "**" enters hidden directories).
func compileFilter(pattern string) (*globPattern, error) {
	p, err := compilePattern(pattern)
	if err != nil {
		return nil, err
	}
	for i := range p.alts {
		for j := range p.alts[i].segs {
			p.alts[i].segs[j].anyDot = true
		}
	}
	return p, nil
}

// compileAlt compiles one brace-free alternative.
func compileAlt(s string) (altPattern, error) {
	if !strings.Contains(s, "/") {
		if s == ".." {
			return altPattern{}, ErrInvalidPattern
		}
		return altPattern{base: true, segs: []segment{parseSegment(s)}}, nil
	}
	s = strings.TrimLeft(s, "/") // a leading "/" anchors to the root
	a := altPattern{never: strings.HasSuffix(s, "/")}
	for _, part := range strings.Split(s, "/") {
		switch part {
		case "..":
			return altPattern{}, ErrInvalidPattern
		case "", ".":
			continue
		case "**":
			a.segs = append(a.segs, segment{star2: true})
		default:
			a.segs = append(a.segs, parseSegment(part))
		}
	}
	if len(a.segs) == 0 {
		a.never = true
	}
	return a, nil
}

// match reports whether the root-relative path rel matches.
func (p *globPattern) match(rel string) bool {
	var segs []string
	for i := range p.alts {
		a := &p.alts[i]
		switch {
		case a.never:
		case a.base:
			if a.segs[0].match(path.Base(rel)) {
				return true
			}
		default:
			if segs == nil {
				segs = strings.Split(rel, "/")
			}
			if st := a.run(segs); st != nil && st[len(a.segs)] {
				return true
			}
		}
	}
	return false
}

// mayDescend reports whether a file below the root-relative directory dir
// could match, i.e. whether a walk needs to enter dir.
func (p *globPattern) mayDescend(dir string) bool {
	segs := strings.Split(dir, "/")
	for i := range p.alts {
		a := &p.alts[i]
		if a.base {
			return true
		}
		if a.never {
			continue
		}
		st := a.run(segs)
		for j := 0; st != nil && j < len(a.segs); j++ {
			if st[j] {
				return true
			}
		}
	}
	return false
}

// run feeds path segments to the alternative seen as an automaton whose
// state i means "segs[:i] matched". It returns the reachable states after
// all segments, or nil when none is.
func (a *altPattern) run(segs []string) []bool {
	m := len(a.segs)
	cur, next := make([]bool, m+1), make([]bool, m+1)
	cur[0] = true
	a.closure(cur)
	for _, s := range segs {
		clear(next)
		alive := false
		for i := 0; i < m; i++ {
			if !cur[i] {
				continue
			}
			if p := &a.segs[i]; p.star2 {
				if p.anyDot || !strings.HasPrefix(s, ".") {
					next[i], alive = true, true
				}
			} else if p.match(s) {
				next[i+1], alive = true, true
			}
		}
		if !alive {
			return nil
		}
		a.closure(next)
		cur, next = next, cur
	}
	return cur
}

// closure lets every "**" match zero segments.
func (a *altPattern) closure(st []bool) {
	for i, s := range a.segs {
		if st[i] && s.star2 {
			st[i+1] = true
		}
	}
}

// parseSegment compiles one fnmatch-style segment: "*", "?", "[...]" with
// "!" or "^" negation and ranges; an unclosed "[" is literal; no escapes.
func parseSegment(s string) segment {
	seg := segment{dot: strings.HasPrefix(s, ".")}
	rs := patternRunes(s) // bytes that are not UTF-8 stay distinct
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*':
			if n := len(seg.toks); n == 0 || seg.toks[n-1].kind != tStar {
				seg.toks = append(seg.toks, token{kind: tStar})
			}
		case '?':
			seg.toks = append(seg.toks, token{kind: tAny})
		case '[':
			if t, end, ok := parseClass(rs, i); ok {
				seg.toks = append(seg.toks, t)
				i = end
				continue
			}
			seg.toks = append(seg.toks, token{kind: tLit, r: '['})
		default:
			seg.toks = append(seg.toks, token{kind: tLit, r: rs[i]})
		}
	}
	return seg
}

// parseClass parses the bracket expression starting at rs[open] and returns
// it with the index of its closing "]".
func parseClass(rs []rune, open int) (token, int, bool) {
	t := token{kind: tClass}
	j := open + 1
	if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
		t.neg = true
		j++
	}
	start := j
	if j < len(rs) && rs[j] == ']' {
		j++ // a leading "]" is a member
	}
	for j < len(rs) && rs[j] != ']' {
		j++
	}
	if j >= len(rs) {
		return token{}, 0, false
	}
	members := rs[start:j]
	for k := 0; k < len(members); k++ {
		if k+2 < len(members) && members[k+1] == '-' {
			t.ranges = append(t.ranges, [2]rune{members[k], members[k+2]})
			k += 2
			continue
		}
		t.ranges = append(t.ranges, [2]rune{members[k], members[k]})
	}
	return t, j, true
}

// matches reports whether the single-rune token t accepts r.
func (t *token) matches(r rune) bool {
	switch t.kind {
	case tLit:
		return t.r == r
	case tAny:
		return true
	case tClass:
		for _, rg := range t.ranges {
			if rg[0] <= r && r <= rg[1] {
				return !t.neg
			}
		}
		return t.neg
	}
	return false
}

// match reports whether the segment pattern matches the name; a hidden
// name only matches a pattern that starts with ".".
func (s *segment) match(name string) bool {
	if strings.HasPrefix(name, ".") && !s.dot && !s.anyDot {
		return false
	}
	toks := s.toks
	ti, ni := 0, 0
	starTi, starNi := -1, 0
	for {
		if ti < len(toks) {
			t := &toks[ti]
			if t.kind == tStar {
				starTi, starNi = ti, ni
				ti++
				continue
			}
			if ni < len(name) {
				r, size := decodeRune(name[ni:])
				if t.matches(r) {
					ti++
					ni += size
					continue
				}
			}
		} else if ni == len(name) {
			return true
		}
		// Mismatch: let the last "*" swallow one more rune, if any.
		if starTi < 0 || starNi == len(name) {
			return false
		}
		_, size := decodeRune(name[starNi:])
		starNi += size
		ti, ni = starTi+1, starNi
	}
}
