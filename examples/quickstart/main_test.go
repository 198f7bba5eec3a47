package main

import (
	"bytes"
	"regexp"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"mux", "memory", "shortcut copy", "shortcut direct"} {
		re := regexp.MustCompile(`(?m)^` + path + ` +42 +\S+s$`)
		if !re.Match(out.Bytes()) {
			t.Errorf("no line for %q with the product 42 in:\n%s", path, out.String())
		}
	}
}
