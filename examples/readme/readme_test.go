package readme_test

import (
	"os"
	"path/filepath"
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

// quoted are the files whose examples the README and docs/ may quote:
// this package's (unix_example_test.go holds docs/unix.md's), the
// quickstart's program, the faults example's test, and httpzerodial's and
// grpczerodial's (docs/grpc.md quotes both of grpczerodial's), modules of their own that the root module cannot import,
// so read as text here (their examples run in their own tests; the
// quickstart's and the faults example's in their own too).
var quoted = []string{
	"readme_example_test.go",
	"unix_example_test.go",
	"../quickstart/main.go",
	"../faults/orders_test.go",
	"../../httpzerodial/example_test.go",
	"../../grpczerodial/example_test.go",
	"../../grpczerodial/example_http_test.go",
}

// docs are the pages whose Go blocks must be quoted: the README and every
// page of docs/.
func docs(t *testing.T) []string {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages in docs/")
	}
	return append([]string{"../../README.md"}, pages...)
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestDocsQuoteExamples: every Go block of the README and of docs/ appears,
// line for line, in one of the quoted examples, which compile and run.
func TestDocsQuoteExamples(t *testing.T) {
	var hays [][]string
	for _, name := range quoted {
		examples, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		hays = append(hays, normalize(string(examples)))
	}
	total := 0
	for _, page := range docs(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlock.FindAllStringSubmatch(string(text), -1)
		total += len(blocks)
		for _, b := range blocks {
			if !slices.ContainsFunc(hays, func(hay []string) bool { return contains(hay, normalize(b[1])) }) {
				t.Errorf("%s: Go block not found in %s:\n%s", strings.TrimPrefix(page, "../../"), strings.Join(quoted, " or "), b[1])
			}
		}
	}
	if total == 0 {
		t.Fatal("no Go blocks in the README or docs/")
	}
}
