package readme_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// normalize drops blank lines and each line's indentation, so that a
// snippet matches its example whatever it is nested in.
func normalize(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

func contains(hay, needle []string) bool {
	for i := 0; i+len(needle) <= len(hay); i++ {
		match := true
		for j := range needle {
			if hay[i+j] != needle[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// quoted are the files whose examples the README may quote: this
// package's, and httpzerodial's, a module of its own that the root module
// cannot import, so read as text here (its examples run in its own tests).
var quoted = []string{"readme_example_test.go", "../../httpzerodial/example_test.go"}

// TestREADMEQuotesExamples: every Go block of the README appears, line for
// line, in one of the quoted examples, which compile and run.
func TestREADMEQuotesExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var hays [][]string
	for _, name := range quoted {
		examples, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		hays = append(hays, normalize(string(examples)))
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("no Go blocks in the README")
	}
	for _, b := range blocks {
		if !slices.ContainsFunc(hays, func(hay []string) bool { return contains(hay, normalize(b[1])) }) {
			t.Errorf("README block not found in %s:\n%s", strings.Join(quoted, " or "), b[1])
		}
	}
}
