package testenv

import (
	"flag"
	"testing"
)

// With no engine, MustHaveEngine skips the test, saying how to run it;
// with one, it does nothing.
func TestMustHaveEngine(t *testing.T) {
	old := noEngine
	t.Cleanup(func() { noEngine = old })

	noEngine = "none answers at unix:///nowhere.sock"
	var skipped, ranOn bool
	t.Run("without", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		MustHaveEngine(t)
		ranOn = true
	})
	if !skipped || ranOn {
		t.Errorf("without an engine: skipped %v, ran on %v; want a skip", skipped, ranOn)
	}

	noEngine = ""
	t.Run("with", func(t *testing.T) {
		MustHaveEngine(t)
		if t.Skipped() {
			t.Error("skipped with an engine")
		}
	})
}

// skipExamples adds ^Example to -test.skip, keeping a pattern given.
func TestSkipExamples(t *testing.T) {
	f := flag.Lookup("test.skip")
	if f == nil {
		t.Fatal("no -test.skip flag")
	}
	old := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(old) })
	for _, c := range []struct{ given, want string }{
		{"", "^Example"},
		{"TestX", "TestX|^Example"},
		{"TestX/sub", "TestX/sub"}, // a pattern of levels is left as it is
	} {
		if err := f.Value.Set(c.given); err != nil {
			t.Fatal(err)
		}
		skipExamples()
		if got := f.Value.String(); got != c.want {
			t.Errorf("-test.skip %q: got %q, want %q", c.given, got, c.want)
		}
	}
}
