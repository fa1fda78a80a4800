package byteflag

import (
	"flag"
	"io"
	"testing"
)

func TestSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512m", 512 << 20, true},
		{"2g", 2 << 30, true},
		{"1048576", 1 << 20, true},
		{"1.5k", 1536, true},
		{"-1g", 0, false},
		{"lots", 0, false},
		{"", 0, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var s Size
		fs.Var(&s, "memory", "")
		err := fs.Parse([]string{"-memory", tt.in})
		if (err == nil) != tt.ok || int64(s) != tt.want {
			t.Errorf("-memory %q: %d, %v; want %d, ok %v", tt.in, s, err, tt.want, tt.ok)
		}
	}
	var zero Size
	if zero.String() != "" {
		t.Errorf("unset: %q", zero.String())
	}
	s := Size(512 << 20)
	if s.String() != "512MiB" {
		t.Errorf("512m prints %q", s.String())
	}
}
