package sandbox

import (
	"strings"
	"testing"
)

// As os/exec's TestPrefixSuffixSaver: the first and last N bytes, and how
// many were left out between them.
func TestPrefixSuffixSaver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		N      int
		writes []string
		want   string
	}{
		{N: 2, writes: nil, want: ""},
		{N: 2, writes: []string{"a"}, want: "a"},
		{N: 2, writes: []string{"abc", "d"}, want: "abcd"},
		{N: 2, writes: []string{"abc", "d", "e"}, want: "ab\n... omitting 1 bytes ...\nde"},
		{N: 2, writes: []string{"ab______________________yz"}, want: "ab\n... omitting 22 bytes ...\nyz"},
		{N: 2, writes: []string{"ab_______________________y", "z"}, want: "ab\n... omitting 23 bytes ...\nyz"},
	}
	for i, tt := range tests {
		w := &prefixSuffixSaver{N: tt.N}
		for _, s := range tt.writes {
			n, err := w.Write([]byte(s))
			if n != len(s) || err != nil {
				t.Fatalf("%d. Write(%q) = %v, %v; want %v, nil", i, s, n, err, len(s))
			}
		}
		if got := string(w.Bytes()); got != tt.want {
			t.Errorf("%d. Bytes = %q; want %q", i, got, tt.want)
		}
	}
}

// A limitBuffer keeps up to max bytes and refuses more with ErrTooLarge.
func TestLimitBuffer(t *testing.T) {
	t.Parallel()
	w := &limitBuffer{max: 5}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("def")); err == nil || !strings.Contains(err.Error(), "over 5 bytes") {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if w.buf.String() != "abc" {
		t.Fatalf("kept %q", w.buf.String())
	}
}
