package tools

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Size limits of deepagents' tool results. Lengths are counted in
// characters (code points), as Python's len counts them.
const (
	// maxResultChars is 20000 tokens × 4 characters.
	maxResultChars = 80000
	// maxLineChars is where read_file splits a line into continuation rows.
	maxLineChars = 5000
)

// truncationGuidance ends an ls, glob or grep result cut at maxResultChars.
const truncationGuidance = "... [results truncated, try being more specific with your parameters]"

// runeLen is Python's len of s.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// runePrefix returns the first n characters of s.
func runePrefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// truncateList is deepagents' truncate_if_too_long for a list: when the
// items hold more than maxResultChars characters, it keeps the first
// len*maxResultChars/total items and appends the guidance item.
func truncateList(items []string) []string {
	total := 0
	for _, s := range items {
		total += runeLen(s)
	}
	if total <= maxResultChars {
		return items
	}
	keep := len(items) * maxResultChars / total
	return append(items[:keep:keep], truncationGuidance)
}

// truncateText is deepagents' truncate_if_too_long for a string.
func truncateText(s string) string {
	if runeLen(s) <= maxResultChars {
		return s
	}
	return runePrefix(s, maxResultChars) + "\n" + truncationGuidance
}

// formatPaths is deepagents' _format_file_paths: "No files found" or the
// Python str() of the (truncated) list.
func formatPaths(paths []string) string {
	if len(paths) == 0 {
		return "No files found"
	}
	return pyList(truncateList(paths))
}

// pySeconds renders d in seconds as Python's str() renders an int ("120")
// or a float ("2.5").
func pySeconds(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return pyFloat(d.Seconds())
}

// pyFloat renders f as Python's str() renders a float: "10.0", "2.5".
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}
