package dispatchtest

import (
	"fmt"
	"slices"
	"strings"
)

// Cases returns the names of the suite's cases, in the order Run runs
// them.
func Cases() []string {
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	return names
}

// Table renders, in Markdown, what each path declares: a table whose rows
// are the cases and whose columns are the profiles, each cell "same"
// (the reference path's outcome) or the differences that change it; then
// each difference, what it is and how it changes each case it affects.
// docs/conformance.md shows Table(Profiles...).
func Table(profiles ...Profile) string {
	var b strings.Builder
	b.WriteString("| case |")
	for _, p := range profiles {
		fmt.Fprintf(&b, " %s |", p.Name)
	}
	b.WriteString("\n| --- |")
	for range profiles {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	var used []*Difference
	for i := range cases {
		c := &cases[i]
		fmt.Fprintf(&b, "| %s |", c.name)
		for _, p := range profiles {
			ds, _ := p.affecting(c)
			if len(ds) == 0 {
				b.WriteString(" same |")
				continue
			}
			var names []string
			for _, d := range ds {
				names = append(names, d.Name)
				if !slices.Contains(used, d) {
					used = append(used, d)
				}
			}
			fmt.Fprintf(&b, " %s |", strings.Join(names, "; "))
		}
		b.WriteString("\n")
	}
	for _, d := range used {
		fmt.Fprintf(&b, "\n**%s** (%s): %s.\n\n", d.Name, declaredBy(d, profiles), d.Doc)
		for i := range cases {
			if e, ok := d.Effects[cases[i].name]; ok {
				fmt.Fprintf(&b, "- %s: %s\n", cases[i].name, e.Doc)
			}
		}
		if d.Streams != nil {
			fmt.Fprintf(&b, "- every other stream case: %s\n", d.Streams.Doc)
		}
	}
	return b.String()
}

// declaredBy names the profiles that declare d.
func declaredBy(d *Difference, profiles []Profile) string {
	var names []string
	for _, p := range profiles {
		if slices.Contains(p.Differences, d) {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}
