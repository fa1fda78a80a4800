package helper

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestLaunchKeepsBytes(t *testing.T) {
	l := launch{Argv: []string{"/bin/sh", "-c", "cat x\xff"}, Env: []string{"A=\xfe"}, Dir: "/w/d\xfe"}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back launch
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(l, back) {
		t.Fatalf("%+v came back as %+v (%s, %v)", l, back, b, err)
	}
}
