package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Expected values were produced by CPython 3.11's repr and str(list).
func TestPyRepr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `''`},
		{"a", `'a'`},
		{"it's", `"it's"`},
		{`say "hi"`, `'say "hi"'`},
		{`both ' and "`, `'both \' and "'`},
		{`back\slash`, `'back\\slash'`},
		{"tab\tnl\nret\r", `'tab\tnl\nret\r'`},
		{"\x00\x01\x1f\x7f", `'\x00\x01\x1f\x7f'`},
		{"café 日本", `'café 日本'`},
		{"\u00a0nbsp", `'\xa0nbsp'`},
		{"\u00ad", `'\xad'`},
		{"\u0085", `'\x85'`},
		{"\u200b", `'\u200b'`},
		{"\ufeff", `'\ufeff'`},
		{"\u2028", `'\u2028'`},
		{"\U0001F600", "'\U0001F600'"},
		{"\U000e0001", `'\U000e0001'`},
		{"\uffff", `'\uffff'`},
		{"\U0010ffff", `'\U0010ffff'`},
		{"\u0378", `'\u0378'`},
		{"/workspace/a b.txt", `'/workspace/a b.txt'`},
		{"\xff\x80", `'\udcff\udc80'`}, // not UTF-8: surrogateescape
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, pyRepr(tt.in), "repr(%q)", tt.in)
	}
}

func TestPyList(t *testing.T) {
	assert.Equal(t, `[]`, pyList(nil))
	assert.Equal(t, `['/a', "it's", 'b\\c']`, pyList([]string{"/a", "it's", `b\c`}))
}
