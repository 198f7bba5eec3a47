package faultnet

import (
	"cmp"
	"fmt"
	"time"
)

// Kind is what a fault did.
type Kind string

// The kinds of fault the log records.
const (
	// Delayed: a frame arrived Delay later than it would have (latency,
	// jitter, a slow reader, a bandwidth cap, the frames ahead of it).
	Delayed Kind = "delayed"
	// Lost: a frame never arrived.
	Lost Kind = "lost"
	// Duplicated: a frame arrived twice.
	Duplicated Kind = "duplicated"
	// Cut: the connection was reset instead of carrying the frame.
	Cut Kind = "cut"
	// Held: a frame, or a dial, waited Delay for a partition to heal (a
	// Delay of 0: for one that never heals).
	Held Kind = "held"
	// PartitionReset: a partition that began reset the connection.
	PartitionReset Kind = "partition-reset"
	// Reset: Net.Reset reset the connection.
	Reset Kind = "reset"
	// Refused: a dial was refused.
	Refused Kind = "refused"
	// Hung: a dial hung until its context ended.
	Hung Kind = "hung"
)

// Event is one fault a Net injected.
type Event struct {
	// At is when, counted from the Net's New.
	At time.Duration
	// Conn names the connection, "host→addr#n" for the nth dial from host
	// to addr.
	Conn string
	// Dir is the way the frame went; Both for a dial or a connection.
	Dir Direction
	// Frame is the frame's number among those sent that way on the
	// connection, from 1; 0 for a dial or a connection.
	Frame int
	// Method is the frame's method, if it has one (Rule.Method).
	Method string
	// Kind is what happened, Delay how long it took where that applies.
	Kind  Kind
	Delay time.Duration

	conn connID
}

// String gives the event on one line: "1.5s orders→inventory-0#2 →3
// Inventory.Reserve lost".
func (e Event) String() string {
	s := fmt.Sprintf("%v %s", e.At, e.Conn)
	if e.Frame > 0 {
		s += fmt.Sprintf(" %v%d", e.Dir, e.Frame)
	}
	if e.Method != "" {
		s += " " + e.Method
	}
	s += " " + string(e.Kind)
	if e.Delay > 0 {
		s += " " + e.Delay.String()
	}
	return s
}

func compareEvents(a, b Event) int {
	if c := cmp.Compare(a.At, b.At); c != 0 {
		return c
	}
	if c := compareConn(a.conn, b.conn); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Dir, b.Dir); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Frame, b.Frame); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}
