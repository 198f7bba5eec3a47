package faultnet

import "time"

// Direction is the way a frame travels on a connection.
type Direction uint8

const (
	// Both matches frames going either way: the zero value of a Rule's Dir.
	Both Direction = iota
	// ToListener is the way of the frames a dialler sends: requests, and
	// the frames of the streams it opens.
	ToListener
	// ToDialler is the way of the frames the listener's end sends back:
	// replies, and the frames of its streams.
	ToDialler
)

// String returns an arrow: "→" (ToListener), "←" (ToDialler), "↔".
func (d Direction) String() string {
	switch d {
	case ToListener:
		return "→"
	case ToDialler:
		return "←"
	}
	return "↔"
}

// Rule states faults: which dials and frames it applies to (its match
// fields, whose zero values match everything) and what happens to them.
// The faults of every rule that matches a frame apply together, in the
// order the rules were added: their delays add up, and each draws its
// chances of its own.
type Rule struct {
	// Host is the dialling host, the name given to Net.Wrap.
	Host string
	// Addr is the dialled address, as Dial was given it.
	Addr string
	// Dir is the way of the frames the rule applies to. Dials match only
	// a rule of Both.
	Dir Direction
	// Method is "Service.Method": a request and its response name it in
	// their Service-Method header (WIRE.md), and a stream's frames, which
	// carry only its Seq, are told by the open frame that began the
	// stream. A frame no method can be told of (a Drain) matches only a
	// rule without Method, and so do dials.
	Method string

	// Latency is added to each frame's trip.
	Latency time.Duration
	// Jitter adds to Latency a delay drawn from [0, Jitter) for each
	// frame. Frames still arrive in the order they were sent, as on a
	// stream connection: one drawn shorter waits for the one before it.
	Jitter time.Duration
	// Loss is the chance, from 0 to 1, that a frame is lost while its
	// connection carries on.
	Loss float64
	// Duplicate is the chance that a request or a response (a frame with
	// a Service-Method and a Seq, and no Stream header) is delivered
	// twice; stream frames are never duplicated, since a second copy of
	// one would be a message its sender never sent. No stream connection
	// duplicates a frame, and zerodial's wire cannot tell a copy: a Seq is
	// unique only among the calls in flight (WIRE.md) and is reused once
	// its reply has come, so a copy of a response is taken for the reply
	// of the call that takes its Seq next, and a copy of a request in
	// flight is refused with a response of its own. It is for testing a
	// peer's own guards.
	Duplicate float64
	// CutAfterFrames, when above 0, resets the connection when the frame
	// after that many of its frames matching the rule is sent: those
	// arrive, that one does not, and both ends see the connection end.
	CutAfterFrames int
	// CutAfterBytes, when above 0, resets the connection when a frame
	// would take the bytes of its frames matching the rule (header block
	// and body, as the frame limit counts them) past it; that frame does
	// not arrive.
	CutAfterBytes int
	// SlowReader makes the receiving end take this long over each frame:
	// frames arrive no closer together, and what waits beyond a
	// connection's buffers holds its sender back.
	SlowReader time.Duration
	// Bandwidth, when above 0, is the bytes per second the connection
	// carries that way: each frame holds the link for its size over it.
	Bandwidth int

	// Refuse is the chance that a dial is refused, as by a host with no
	// listener (an error matching transport.ErrConnectionRefused).
	Refuse float64
	// Hang is the chance that a dial hangs until its context ends, as one
	// to a host that drops its packets does.
	Hang float64
}

// matches reports whether r applies to a frame of dir and method on a
// connection from host to addr; dir 0 is a dial.
func (r *Rule) matches(host, addr string, dir Direction, method string) bool {
	if r.Host != "" && r.Host != host || r.Addr != "" && r.Addr != addr {
		return false
	}
	if dir == Both { // a dial
		return r.Dir == Both && r.Method == ""
	}
	return (r.Dir == Both || r.Dir == dir) && (r.Method == "" || r.Method == method)
}

// Partition cuts the network between two sets of names — hosts (the names
// given to Net.Wrap) and dialled addresses — for a while: a connection
// crosses it when one of its ends is in A and the other in B.
//
// While it holds, the frames that cross it wait for the heal (a stream
// connection's peer retransmits them: they arrive, late, unless their
// connection ends first), and so do the dials (a dialler's handshake is
// retried: it completes at the heal, or fails when its context ends).
type Partition struct {
	A, B []string
	// For is how long it holds from when Net.Partition is called; 0: until
	// the Net is done with.
	For time.Duration
	// Reset ends the connections that cross it as it begins, both ends
	// seeing the end, as a keepalive that gave up or a router answering
	// with resets would.
	Reset bool
	// Refuse refuses the dials that cross it at once (an error matching
	// transport.ErrConnectionRefused), as a host whose router answers
	// with an ICMP unreachable or a reset would, rather than holding them.
	Refuse bool
}

type partition struct {
	Partition
	a, b  map[string]bool
	until time.Time // zero: never heals
}

func (p *partition) crosses(host, addr string) bool {
	return p.a[host] && p.b[addr] || p.b[host] && p.a[addr]
}

func (p *partition) holds(now time.Time) bool {
	return p.until.IsZero() || now.Before(p.until)
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
