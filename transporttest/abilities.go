package transporttest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zerodial/transport"
)

// Abilities is a set of the optional interfaces a Transport, its
// Listeners, the addresses they report and its Sockets may implement:
// everything found by a type assertion in this module rather than required
// by transport.Transport, transport.Listener and transport.Socket. Each
// one is a speed, a limit or an identity that dispatch takes when it is
// there and silently does without when it is not, which is net/http's
// Flusher trap: a wrapper that forgets to pass one on compiles, serves, and
// loses it. So Run is told which ones the Transport under test has, fails
// with the interface's name when one is missing or one it has is not
// claimed, and holds each one claimed to its contract.
//
// A Socket ability is claimed for both ends: the Sockets Dial returns,
// which dispatch's Client uses, and those Accept returns, which its Server
// uses. A Transport whose ends differ — a wrapper of the dialling side
// alone, as client-side middleware is — states the accepted end's apart
// with Accepted, and its Socket abilities then claim the dialled end's.
type Abilities uint32

// The abilities, with what dispatch loses when one is missing.
const (
	// TransportFrameLimiter: the Transport is a transport.FrameLimiter.
	// Without it, a Client takes the default limit for the Transport's,
	// and the in-process shortcut holds calls to that one.
	TransportFrameLimiter Abilities = 1 << iota
	// TransportAddrSpacer: the Transport is a transport.AddrSpacer. Without
	// it, its addresses are taken for the host's, shared by every
	// Transport of the process, and the in-process shortcut may call a
	// Server this Transport could not reach.
	TransportAddrSpacer
	// TransportWireReporter: the Transport is a transport.WireReporter.
	// Without it, its Clients never take the in-process shortcut.
	TransportWireReporter
	// ListenerFrameLimiter: its Listeners are transport.FrameLimiters.
	// Without it, the in-process shortcut holds a call to the client's
	// limit, not the listener's, which the network would.
	ListenerFrameLimiter
	// ListenerClosedReporter: its Listeners are transport.ClosedReporters.
	// Without it, the in-process shortcut routes calls to a closed
	// listener's Server until Serve notices.
	ListenerClosedReporter
	// ListenerWireReporter: its Listeners are transport.WireReporters.
	// Without it, no Client reaches their Servers in-process.
	ListenerWireReporter
	// ListenerAddrSpacer: the addresses its Listeners report (Addr) are
	// transport.AddrSpacers, naming the same space as the Transport's.
	ListenerAddrSpacer
	// SocketAsyncSender: its Sockets are transport.AsyncSenders. Without
	// it, a stream's messages are written one system call each.
	SocketAsyncSender
	// SocketBatchSender: its Sockets are transport.BatchSenders. Without
	// it, concurrent calls on one connection do not share writes.
	SocketBatchSender
	// SocketFrameWaiter: its Sockets are transport.FrameWaiters. Without
	// it, a Server never runs a call on the goroutine that read it, nor a
	// Client read a reply on the caller's goroutine.
	SocketFrameWaiter
	// SocketTLSReporter: its Sockets are transport.TLSReporters. Without
	// it, a handler's dispatch.CallInfo has no TLS state, and a caller
	// over TLS cannot be authorised by its certificate.
	SocketTLSReporter
	// SocketUnwritten: its Sockets have Unwritten() int64, the bytes they
	// took from senders and have not written. Without it, a Server's
	// WithMaxBytesPerConn does not count the replies queued in the Socket.
	SocketUnwritten
	// SocketWaitWritten: its Sockets have WaitWritten(context.Context)
	// error, which waits until what they took is written. Without it, a
	// Server's graceful Shutdown may close a connection with replies still
	// queued in the Socket, which Close drops.
	SocketWaitWritten
	// SocketBuffered: its Sockets have Buffered() bool, whether the next
	// message has arrived whole. Without it, a Server does not hold a
	// reply back for the next one to join its write.
	SocketBuffered
	// SocketPeerCredReporter: its Sockets are transport.PeerCredReporters.
	// Without it, a handler's dispatch.CallInfo has no credentials of a
	// caller over a unix socket, which cannot then be authorised by its
	// user.
	SocketPeerCredReporter

	lastAbility = SocketPeerCredReporter
)

// The accepted end's Socket abilities, when Accepted states them apart:
// a bit that says they are stated, and above it the abilities.
const (
	acceptedStated Abilities = 1 << 15
	acceptedShift            = 16
)

// Accepted states the Socket abilities of the Sockets a Transport's
// Listeners accept, when they are not those of the Sockets it dials;
// added to a claim, it makes the claim's own Socket abilities the dialled
// end's alone. A wrapper that wraps only what it dials, say, keeps its
// Listeners and their Sockets as they were:
//
//	transporttest.TransportFrameLimiter |
//		transporttest.SocketAsyncSender | transporttest.SocketFrameWaiter | // dialled
//		transporttest.Accepted(transporttest.AllSocketAbilities) // accepted
//
// Accepted(0) states that accepted Sockets have none. Only Sockets have
// ends: any other ability given to Accepted fails CheckAbilities, naming
// it. Accepted(a)|Accepted(b) is Accepted(a|b).
func Accepted(sockets Abilities) Abilities { return acceptedStated | sockets<<acceptedShift }

// own returns the abilities a claims of the Transport, its Listeners,
// their addresses and the dialled Sockets (and the accepted ones, unless
// Accepted states theirs apart).
func (a Abilities) own() Abilities { return a & (acceptedStated - 1) }

// stated reports whether a states the accepted Sockets' abilities apart.
func (a Abilities) stated() bool { return a&acceptedStated != 0 }

// acceptedPart returns what a claims of the accepted Sockets, as Socket
// abilities: what Accepted was given, or else its own Socket abilities.
func (a Abilities) acceptedPart() Abilities {
	if a.stated() {
		return a >> acceptedShift
	}
	return a & AllSocketAbilities
}

// end returns what a claims as seen from one end of a connection: its
// abilities other than the Sockets', and that end's Sockets'.
func (a Abilities) end(accepted bool) Abilities {
	if !accepted {
		return a.own()
	}
	return a.own()&^AllSocketAbilities | a.acceptedPart()&AllSocketAbilities
}

// AllSocketAbilities are every ability a Socket may have. tcp's Sockets
// have them all, mux's all but SocketFrameWaiter, memory's that one
// alone.
const AllSocketAbilities = SocketAsyncSender | SocketBatchSender | SocketFrameWaiter | SocketTLSReporter |
	SocketUnwritten | SocketWaitWritten | SocketBuffered | SocketPeerCredReporter

// ability describes one bit of Abilities: the interface, what has it, and
// whether v does.
type ability struct {
	bit   Abilities
	id    string // the constant's name
	iface string // the interface, as a type assertion names it
	on    string // what implements it: onTransport, onListener, ...
	check func(v any) bool
	lost  string // what dispatch does without it
}

var abilities = []ability{
	{TransportFrameLimiter, "TransportFrameLimiter", "transport.FrameLimiter", onTransport, is[transport.FrameLimiter],
		"a Client takes the default frame limit for the Transport's, and the in-process shortcut holds calls to that one"},
	{TransportAddrSpacer, "TransportAddrSpacer", "transport.AddrSpacer", onTransport, is[transport.AddrSpacer],
		"its addresses are taken for the host's, and the in-process shortcut may call a Server this Transport could not reach"},
	{TransportWireReporter, "TransportWireReporter", "transport.WireReporter", onTransport, is[transport.WireReporter],
		"its Clients never take the in-process shortcut"},
	{ListenerFrameLimiter, "ListenerFrameLimiter", "transport.FrameLimiter", onListener, is[transport.FrameLimiter],
		"the in-process shortcut holds calls to the client's frame limit, not the listener's, which the network would"},
	{ListenerClosedReporter, "ListenerClosedReporter", "transport.ClosedReporter", onListener, is[transport.ClosedReporter],
		"the in-process shortcut routes calls to a closed listener's Server until Serve notices"},
	{ListenerWireReporter, "ListenerWireReporter", "transport.WireReporter", onListener, is[transport.WireReporter],
		"no Client reaches the listener's Servers in-process"},
	{ListenerAddrSpacer, "ListenerAddrSpacer", "transport.AddrSpacer", onAddr, is[transport.AddrSpacer],
		"the in-process shortcut files the listener's Server in another address space than the Transport's Clients look in"},
	{SocketAsyncSender, "SocketAsyncSender", "transport.AsyncSender", onSocket, is[transport.AsyncSender],
		"a stream's messages are written one system call each"},
	{SocketBatchSender, "SocketBatchSender", "transport.BatchSender", onSocket, is[transport.BatchSender],
		"concurrent calls on one connection do not share writes"},
	{SocketFrameWaiter, "SocketFrameWaiter", "transport.FrameWaiter", onSocket, is[transport.FrameWaiter],
		"calls and replies are not read on the goroutine that waits for them"},
	{SocketTLSReporter, "SocketTLSReporter", "transport.TLSReporter", onSocket, is[transport.TLSReporter],
		"handlers see no TLS state (dispatch.CallInfo) and cannot authorise a caller by its certificate"},
	{SocketUnwritten, "SocketUnwritten", "interface{ Unwritten() int64 }", onSocket, is[unwritten],
		"a Server's WithMaxBytesPerConn does not count the replies queued in the Socket"},
	{SocketWaitWritten, "SocketWaitWritten", "interface{ WaitWritten(context.Context) error }", onSocket, is[waitWritten],
		"a Server's graceful Shutdown may close the connection with replies still queued"},
	{SocketBuffered, "SocketBuffered", "interface{ Buffered() bool }", onSocket, is[buffered],
		"a Server does not hold a reply back for the next one to join its write"},
	{SocketPeerCredReporter, "SocketPeerCredReporter", "transport.PeerCredReporter", onSocket, is[transport.PeerCredReporter],
		"handlers see no credentials of a caller over a unix socket (dispatch.CallInfo) and cannot authorise it by its user"},
}

// What an ability is found on.
const (
	onTransport = "Transport"
	onListener  = "Listener"
	onAddr      = "Listener's Addr()"
	onSocket    = "Socket"
)

// The abilities dispatch finds with an interface of its own.
type (
	unwritten   = interface{ Unwritten() int64 }
	waitWritten = interface {
		WaitWritten(ctx context.Context) error
	}
	buffered = interface{ Buffered() bool }
)

func is[T any](v any) bool {
	_, ok := v.(T)
	return ok
}

// Has reports whether a holds every ability of b. A Socket ability of b
// is asked of the dialled Sockets, and one b states with Accepted of the
// accepted Sockets: a claim that states no Accepted claims its Socket
// abilities of both ends, so a.Has(Accepted(SocketFrameWaiter)) is
// a.Has(SocketFrameWaiter) for it.
func (a Abilities) Has(b Abilities) bool {
	if !a.stated() {
		a |= Accepted(a & AllSocketAbilities)
	}
	return a&b == b
}

// String names the abilities of a as its constants do, joined by "|"
// ("SocketAsyncSender|SocketBatchSender"), the accepted Sockets' as
// Accepted's ("Accepted(SocketFrameWaiter)") when stated apart, or
// "none".
func (a Abilities) String() string {
	names := a.own().list(func(ab ability) string { return ab.id })
	if a.stated() {
		names = append(names, "Accepted("+a.acceptedPart().String()+")")
	}
	return joined(names, "|")
}

// Interfaces lists the abilities of a by the interfaces they are, each
// with what implements it ("Socket transport.BatchSender"; "dialled
// Socket" and "accepted Socket" when Accepted states the accepted
// Sockets' apart), or "none".
func (a Abilities) Interfaces() string {
	socket := onSocket
	if a.stated() {
		socket = "dialled " + onSocket
	}
	names := a.own().list(func(ab ability) string {
		if ab.on == onSocket {
			return socket + " " + ab.iface
		}
		return ab.on + " " + ab.iface
	})
	if a.stated() {
		names = append(names, a.acceptedPart().list(func(ab ability) string { return "accepted " + ab.on + " " + ab.iface })...)
	}
	return joined(names, ", ")
}

func (a Abilities) list(name func(ability) string) []string {
	var names []string
	for _, ab := range abilities {
		if a&ab.bit == ab.bit {
			names = append(names, name(ab))
		}
	}
	if rest := a &^ (lastAbility<<1 - 1); rest != 0 {
		names = append(names, fmt.Sprintf("Abilities(%#x)", uint32(rest)))
	}
	return names
}

func joined(names []string, sep string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, sep)
}

// held is what a probe found: the values whose abilities count.
type held struct {
	tr                transport.Transport
	l                 transport.Listener
	dialled, accepted transport.Socket
}

// probe listens on addr with tr, dials the listener and accepts, runs fn
// on what it got, and closes the listener and both Sockets.
func probe(tr transport.Transport, addr string, fn func(h held) error) error {
	l, err := tr.Listen(addr)
	if err != nil {
		return fmt.Errorf("transporttest: Listen(%q): %w", addr, err)
	}
	defer l.Close()
	type accepted struct {
		s   transport.Socket
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		s, err := l.Accept()
		ch <- accepted{s, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c, err := tr.Dial(ctx, l.Addr().String())
	if err != nil {
		l.Close()
		<-ch
		return fmt.Errorf("transporttest: Dial(%q): %w", l.Addr(), err)
	}
	defer c.Close()
	a := <-ch
	if a.err != nil {
		return fmt.Errorf("transporttest: Accept: %w", a.err)
	}
	defer a.s.Close()
	return fn(held{tr: tr, l: l, dialled: c, accepted: a.s})
}

// abilitiesOf returns the abilities h's values have: the accepted
// Socket's stated apart (Accepted) when they are not the dialled one's.
func abilitiesOf(h held) Abilities {
	var a, accepted Abilities
	for _, ab := range abilities {
		for _, v := range h.of(ab.on) {
			switch {
			case !ab.check(v.v):
			case v.accepted:
				accepted |= ab.bit
			default:
				a |= ab.bit
			}
		}
	}
	if accepted != a&AllSocketAbilities {
		a |= Accepted(accepted)
	}
	return a
}

// named is a value an ability is looked for in, and what the value is.
type named struct {
	what     string
	v        any
	accepted bool // the accepted Socket
}

// of returns the values an ability found on on is looked for in.
func (h held) of(on string) []named {
	switch on {
	case onTransport:
		return []named{{"Transport", h.tr, false}}
	case onListener:
		return []named{{"Listener", h.l, false}}
	case onAddr:
		return []named{{"Listener's Addr()", h.l.Addr(), false}}
	}
	return []named{{"dialled Socket", h.dialled, false}, {"accepted Socket", h.accepted, true}}
}

// AbilitiesOf returns the abilities tr has: it listens on addr, dials the
// listener, looks at the Transport, the Listener, its address and both
// Sockets, and closes what it made (not tr). When the accepted Socket's
// abilities are not the dialled one's, it states them apart (Accepted).
// A wrapper's test claims what it wraps has, less what it deliberately
// hides, so that an ability the wrapper forgets to pass on fails Run,
// naming it:
//
//	inner, addr := mk(t)
//	have, err := transporttest.AbilitiesOf(inner, addr)
//	inner.Close()
//	if err != nil {
//		t.Fatal(err)
//	}
//	transporttest.Run(t, mkWrapper, have)
func AbilitiesOf(tr transport.Transport, addr string) (Abilities, error) {
	var a Abilities
	err := probe(tr, addr, func(h held) error {
		a = abilitiesOf(h)
		return nil
	})
	return a, err
}

// CheckAbilities reports whether tr has exactly the abilities claimed: it
// listens on addr, dials the listener, and returns an error naming each
// interface claimed that the Transport, the Listener, its address or
// either end's Socket does not implement, with what dispatch loses
// without it, and each one implemented that is not claimed (so that the
// claims, which a wrapper's test copies, stay whole), all joined
// (errors.Join); nil if they agree. Each end's Socket is held to its own
// claim: the accepted one to what Accepted states, if the claim states
// it. It closes what it made, not tr. Run calls it as its Abilities case.
func CheckAbilities(tr transport.Transport, addr string, claimed Abilities) error {
	if odd := claimed.acceptedPart() &^ AllSocketAbilities; odd != 0 {
		return fmt.Errorf("transporttest: %s: the claim states transporttest.Accepted(%v), which only Socket abilities have: claim them outside Accepted",
			tr, odd)
	}
	var errs []error
	err := probe(tr, addr, func(h held) error {
		for _, ab := range abilities {
			for _, v := range h.of(ab.on) {
				has := ab.check(v.v)
				claims := claimed.end(v.accepted).Has(ab.bit)
				switch {
				case claims && !has:
					errs = append(errs, fmt.Errorf("transporttest: %s: its %s (%T) does not implement %s, which it claims (%s): %s%s",
						tr, v.what, v.v, ab.iface, claimName(claimed, ab, v.accepted), ab.lost, endsDiffer(h, claimed, ab)))
				case !claims && has:
					errs = append(errs, fmt.Errorf("transporttest: %s: its %s (%T) implements %s, which it does not claim: add %s to the claims%s",
						tr, v.what, v.v, ab.iface, claimName(claimed, ab, v.accepted), endsDiffer(h, claimed, ab)))
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// claimName returns how a claim states ab, of the accepted Socket or not.
func claimName(claimed Abilities, ab ability, accepted bool) string {
	if accepted && claimed.stated() {
		return "transporttest.Accepted(transporttest." + ab.id + ")"
	}
	return "transporttest." + ab.id
}

// endsDiffer says, for a Socket ability that one end of h has and the
// other not while claimed lets both ends' Socket abilities be one claim,
// how to claim them apart; "" otherwise.
func endsDiffer(h held, claimed Abilities, ab ability) string {
	if ab.on != onSocket || claimed.stated() || ab.check(h.dialled) == ab.check(h.accepted) {
		return ""
	}
	return " (its accepted Sockets differ from those it dials: state theirs apart with transporttest.Accepted)"
}
