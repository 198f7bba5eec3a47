package dispatchtest

import (
	"testing"
)

// Profile is a path as the suite knows it: its name and the differences
// it declares. A path that declares none must show the reference path's
// outcome in every case.
type Profile struct {
	// Name is the path's name, a column of the table (Table).
	Name string
	// Differences are what the path cannot carry, each changing the
	// outcome of the cases it names.
	Differences []*Difference
}

// Difference is one thing a path cannot carry, as data: its name, why,
// and how it changes the outcome of each case it affects. A case it
// affects still runs, and asserts what the path does instead.
type Difference struct {
	// Name is a few words, a cell of the table: "no metadata".
	Name string
	// Doc says what the path cannot carry, and why.
	Doc string
	// Effects are the cases the difference affects, by name, and how.
	Effects map[string]Effect
	// Streams, when not nil, is the effect on every stream case that
	// Effects does not name (NoStreams: each is refused).
	Streams *Effect
}

// Effect is how a Difference changes one case's outcome on a path. At
// least one of Want and Check is set.
type Effect struct {
	// Doc says in a line how the outcome changes.
	Doc string
	// Run, when not nil, is what the case does on the path instead of its
	// own run: what is left of it there (a stream over a path with none
	// is opened, and must be refused).
	Run func(t *testing.T, c Caller) Outcome
	// Want are the outcomes the path may show, each a function of the
	// reference path's outcome: one of them, where a race decides which
	// (the order of a Server's answer and its close). Several differences
	// affecting a case compose, in the Profile's order.
	Want []func(ref Outcome) Outcome
	// Check, when not nil, asserts what the outcome must be, instead of
	// the case's own assertion.
	Check func(t *testing.T, o Outcome)
}

// effect is d's effect on c, if any.
func (d *Difference) effect(c *testCase) (Effect, bool) {
	if e, ok := d.Effects[c.name]; ok {
		return e, true
	}
	if c.stream && d.Streams != nil {
		return *d.Streams, true
	}
	return Effect{}, false
}

// affecting returns the differences of p that affect c, and their effects.
func (p Profile) affecting(c *testCase) ([]*Difference, []Effect) {
	var ds []*Difference
	var es []Effect
	for _, d := range p.Differences {
		if e, ok := d.effect(c); ok {
			ds = append(ds, d)
			es = append(es, e)
		}
	}
	return ds, es
}
