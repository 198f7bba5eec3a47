package dispatchtest_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatchtest"
)

var update = flag.Bool("update", false, "write the table into docs/conformance.md")

// The markers between which docs/conformance.md holds the table.
const (
	tableBegin = "<!-- table: begin (dispatchtest.Table; go test ./dispatchtest -run TestConformanceDoc -update) -->\n"
	tableEnd   = "<!-- table: end -->\n"
)

// TestConformanceDoc: docs/conformance.md shows the table of every
// profile's differences as Table renders it, so that a difference
// declared, changed or dropped is a change of the doc too.
func TestConformanceDoc(t *testing.T) {
	const path = "../docs/conformance.md"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	before, rest, ok := strings.Cut(string(doc), tableBegin)
	require.True(t, ok, "%s has no line %q", path, tableBegin)
	_, after, ok := strings.Cut(rest, tableEnd)
	require.True(t, ok, "%s has no line %q", path, tableEnd)
	got := before + tableBegin + dispatchtest.Table(dispatchtest.Profiles...) + tableEnd + after
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	assert.Equal(t, got, string(doc), "%s differs from dispatchtest.Table: run go test ./dispatchtest -run TestConformanceDoc -update", path)
}

// Every case has a name of its own, and every Effect of a Difference names
// a case there is and says how it changes it.
func TestDifferencesNameCases(t *testing.T) {
	names := map[string]bool{}
	for _, n := range dispatchtest.Cases() {
		assert.False(t, names[n], "two cases are named %q", n)
		names[n] = true
	}
	for _, p := range dispatchtest.Profiles {
		for _, d := range p.Differences {
			assert.NotEmpty(t, d.Name)
			assert.NotEmpty(t, d.Doc, d.Name)
			for name, e := range d.Effects {
				assert.True(t, names[name], "%s: %q names no case", d.Name, name)
				assert.NotEmpty(t, e.Doc, "%s: %q", d.Name, name)
				assert.True(t, e.Want != nil || e.Check != nil, "%s: %q says neither Want nor Check", d.Name, name)
			}
		}
	}
}
