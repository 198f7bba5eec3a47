package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestReadmeTargets fails when the targets tables of the bench module's
// README.md differ from targets and retired: the README states the goals
// the report judges, so the two change together.
func TestReadmeTargets(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)

	var want []string
	for _, tg := range targets {
		want = append(want, tg.String())
	}
	if got := readmeColumn(t, readme, "| target | why |"); !slices.Equal(got, want) {
		t.Errorf("README.md's targets table lists, in order:\n%s\nthe report judges:\n%s\nchange them together",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	want = nil
	for _, r := range retired {
		want = append(want, r.Target.String()+" | "+r.By)
	}
	if got := readmeColumn(t, readme, "| retired target | retired by |"); !slices.Equal(got, want) {
		t.Errorf("README.md's retired targets table lists:\n%s\nthe report has:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// readmeColumn returns the rows of the table under head in readme, each
// row's cells but the last (the free text of the targets table; the
// retired table has none) without backquotes, joined by " | ".
func readmeColumn(t *testing.T, readme, head string) []string {
	t.Helper()
	_, table, ok := strings.Cut(readme, "\n"+head+"\n")
	if !ok {
		t.Fatalf("README.md has no table headed %q", head)
	}
	cols := strings.Count(head, "|") - 1
	var rows []string
	for i, line := range strings.Split(table, "\n") {
		if i == 0 {
			continue // | --- | --- |
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != cols {
			t.Fatalf("README.md: row %q has %d cells, want %d", line, len(cells), cols)
		}
		if head == "| target | why |" {
			cells = cells[:1]
		}
		for j, c := range cells {
			cells[j] = strings.Trim(strings.TrimSpace(c), "`")
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	return rows
}
