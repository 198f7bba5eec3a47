// Package preface encodes and checks the connection preface of WIRE.md
// (section 2, "Connection preface"): the eight bytes both ends of a tcp or
// mux connection send before anything else. Without it a peer of the wrong
// kind — a tcp client on a mux port, a mux client on a port that never
// speaks — got a working Dial and an obscure failure later; with it, Dial
// fails at once and names what the peer speaks.
package preface

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/zerodial/transport"
)

// The preface: Magic, a protocol byte, a version byte, a reserved byte.
const (
	// Len is the preface's length in bytes.
	Len = 8
	// Magic opens every preface.
	Magic = "ZDIAL"
	// TCP is the protocol byte of the tcp transport's frame stream.
	TCP byte = 't'
	// Mux is the protocol byte of the mux transport's yamux session.
	Mux byte = 'm'
	// Version is the version byte this package sends and accepts: the
	// version of the transport's protocol, not of the frame (whose own
	// version byte is in every frame prefix).
	Version byte = 1
	// Timeout bounds each step of connection set-up that waits for the
	// peer: the TLS handshake and the preface exchange, on either end.
	Timeout = 10 * time.Second
)

// Capabilities are the bits of the preface's last byte (WIRE.md,
// "Capabilities"): optional abilities an end announces and its peer may
// use, or ignore, without a new version. A receiver ignores bits it does
// not know.
const (
	// CapS2 says that this end accepts frames whose body is compressed
	// with S2 (frame flag FlagS2).
	CapS2 byte = 0x01
)

// Preface is what one end's preface says.
type Preface struct {
	Protocol byte
	Version  byte
	// Caps is the capabilities byte: what the end announces it accepts.
	// It takes no part in deciding whether two ends speak the same
	// protocol.
	Caps byte
}

// Of returns the preface this package sends for protocol proto, announcing
// no capability.
func Of(proto byte) Preface { return Preface{Protocol: proto, Version: Version} }

// With returns p announcing caps.
func (p Preface) With(caps byte) Preface { p.Caps = caps; return p }

// Speaks reports whether p names the same protocol and version as q,
// whatever either announces.
func (p Preface) Speaks(q Preface) bool { return p.Protocol == q.Protocol && p.Version == q.Version }

// Append appends the eight bytes of p to b.
func (p Preface) Append(b []byte) []byte {
	return append(append(b, Magic...), p.Protocol, p.Version, p.Caps)
}

// String names p as WIRE.md and transport.Wire do: "tcp/1", "mux/1"; an
// unknown protocol byte is quoted ('x'/1).
func (p Preface) String() string {
	return ProtocolName(p.Protocol) + "/" + strconv.Itoa(int(p.Version))
}

// ProtocolName names a protocol byte: "tcp", "mux", or the byte quoted.
func ProtocolName(proto byte) string {
	switch proto {
	case TCP:
		return "tcp"
	case Mux:
		return "mux"
	}
	return strconv.QuoteRuneToASCII(rune(proto))
}

var (
	// ErrIncomplete: the bytes so far are shorter than a preface and may
	// still become one.
	ErrIncomplete = errors.New("preface: incomplete")
	// ErrForeign: the bytes cannot be the start of any preface.
	ErrForeign = errors.New("preface: not a zerodial preface")
)

// Parse reads a peer's preface from b, the bytes received so far. Bytes
// past Len are ignored. It returns ErrForeign as soon as b departs from
// Magic, so a foreign peer that sends a few bytes and waits is told apart
// without waiting for eight, and ErrIncomplete while b is shorter than Len
// and agrees with Magic. The capabilities byte is returned as it is, bits
// this end does not know included: the caller uses the ones it knows.
func Parse(b []byte) (Preface, error) {
	b = b[:min(len(b), Len)]
	m := min(len(b), len(Magic))
	if string(b[:m]) != Magic[:m] {
		return Preface{}, ErrForeign
	}
	if len(b) < Len {
		return Preface{}, ErrIncomplete
	}
	return Preface{Protocol: b[5], Version: b[6], Caps: b[7]}, nil
}

// Error is a peer's preface that is missing, foreign or for another
// protocol or version. It matches transport.ErrProtocol, and unwraps to the
// read error that cut the preface short, if any (io.EOF,
// io.ErrUnexpectedEOF, a reset, a timeout).
type Error struct {
	Transport string  // "tcp" or "mux": who reports
	Peer      string  // the peer's address
	Want      Preface // what this end speaks
	Got       []byte  // what the peer sent, at most Len bytes
	Timeout   time.Duration
	Err       error
}

func (e *Error) Error() string {
	who := e.Transport + ": " + e.Peer
	p, err := Parse(e.Got)
	switch {
	case err == nil:
		return fmt.Sprintf("%s speaks zerodial %v, not %v", who, p, e.Want)
	case errors.Is(err, ErrForeign):
		if h := speaksHTTP(e.Got); h != "" {
			return fmt.Sprintf("%s speaks %s, not zerodial (it sent %q): %s", who, h, e.Got, OverHTTP)
		}
		return fmt.Sprintf("%s is not a zerodial peer (it sent %q)", who, e.Got)
	case isTimeout(e.Err) && len(e.Got) == 0:
		return fmt.Sprintf("%s sent no preface within %v", who, e.Timeout)
	case isTimeout(e.Err):
		return fmt.Sprintf("%s sent only %d bytes of its preface within %v", who, len(e.Got), e.Timeout)
	case len(e.Got) == 0:
		return fmt.Sprintf("%s closed the connection before its preface: %v", who, e.Err)
	}
	return fmt.Sprintf("%s closed the connection after %d bytes of its preface: %v", who, len(e.Got), e.Err)
}

// OverHTTP is what an error about a peer that speaks HTTP tells to do.
const OverHTTP = "call it over HTTP — an httpzerodial client, or the zerodial command with its http:// URL"

// Silent reports whether err is an *Error of a peer that sent nothing
// within the timeout: an HTTP/1 server, waiting for a request line, is
// such a peer to a dialler.
func Silent(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && len(pe.Got) == 0 && isTimeout(pe.Err)
}

// speaksHTTP names the HTTP that got, the first bytes a dialled peer sent,
// are of — "HTTP/1" for a status line (the server answered the preface as
// a bad request, as proxies do at its first byte that no request line
// has), "HTTP/2" for the frame header of a SETTINGS frame on stream 0 (an
// HTTP/2 server's preface, which it sends unasked) — or "" for neither.
func speaksHTTP(got []byte) string {
	if len(got) >= 5 && string(got[:5]) == "HTTP/" {
		return "HTTP/1"
	}
	// Length (24 bits, a multiple of 6 for SETTINGS), type 4, flags 0 or
	// ACK, and the stream's first three bytes: 0.
	if len(got) == Len && got[3] == 0x04 && got[4]&^0x01 == 0 && got[5]&^0x80 == 0 && got[6] == 0 && got[7] == 0 &&
		(int(got[0])<<16|int(got[1])<<8|int(got[2]))%6 == 0 {
		return "HTTP/2"
	}
	return ""
}

// Is makes errors.Is(err, transport.ErrProtocol) hold.
func (e *Error) Is(target error) bool { return target == transport.ErrProtocol }

func (e *Error) Unwrap() error { return e.Err }

// Mismatch reports whether err is a zerodial preface naming another
// protocol or version: a misconfiguration worth a warning, where a foreign
// or silent peer (a port scanner, a health check) is not.
func Mismatch(err error) bool {
	var pe *Error
	if !errors.As(err, &pe) {
		return false
	}
	_, perr := Parse(pe.Got)
	return perr == nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// aLongTimeAgo is a deadline in the past, which makes a blocked read or
// write on a net.Conn return at once.
var aLongTimeAgo = time.Unix(1, 0)

// Exchange writes the preface me to c and reads and checks the peer's,
// which it returns; both ends do so at once, so the exchange costs one
// round trip. The write does not wait for the peer's preface, nor the read
// for the write, so it works over a connection whose writes wait for the
// peer to read (net.Pipe), where both ends writing first would wait for
// each other. It reads exactly the peer's preface and nothing after it, so
// c can be handed on unwrapped. peer names the peer in errors.
//
// It gives up after timeout, or when ctx ends, whichever is first; the
// error then matches ctx.Err(). A peer that sends something else, closes
// first or stays silent gets an *Error. On success c is left without a
// deadline; on failure the caller must close c.
func Exchange(ctx context.Context, c net.Conn, me Preface, peer string, timeout time.Duration) (Preface, error) {
	name := ProtocolName(me.Protocol)
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return Preface{}, fmt.Errorf("%s: preface with %s: %w", name, peer, err)
	}
	// A ctx that ends cuts the deadline short, so ctx bounds the exchange
	// whether it ends by its deadline or by cancellation.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	got, err := exchange(c, me)
	if !stop() {
		// ctx ended, and may cut the deadline short at any moment: the
		// connection is unusable, whatever the exchange did.
		cerr := ctx.Err()
		if err != nil {
			cerr = fmt.Errorf("%w: %w", cerr, err)
		}
		return Preface{}, fmt.Errorf("%s: preface with %s: %w", name, peer, cerr)
	}
	return settle(c, me, peer, timeout, got, err)
}

// settle turns what an exchange read into its outcome: the peer's preface
// when it speaks me's protocol and version, an *Error when it does not or
// broke off. c loses its deadline on success.
func settle(c net.Conn, me Preface, peer string, timeout time.Duration, got []byte, err error) (Preface, error) {
	name := ProtocolName(me.Protocol)
	pe := &Error{Transport: name, Peer: peer, Want: Of(me.Protocol), Got: got, Timeout: timeout, Err: err}
	switch {
	case err == nil:
		p, _ := Parse(got)
		if !p.Speaks(me) {
			return Preface{}, pe
		}
		if err := c.SetDeadline(time.Time{}); err != nil {
			return Preface{}, fmt.Errorf("%s: preface with %s: %w", name, peer, err)
		}
		return p, nil
	case got != nil && peerFault(err):
		return Preface{}, pe
	}
	return Preface{}, fmt.Errorf("%s: preface with %s: %w", name, peer, err)
}

// peerFault reports whether a read error means the peer broke off or never
// spoke — a peer not speaking the protocol — rather than, say, a TLS alert.
func peerFault(err error) bool {
	return errors.Is(err, ErrForeign) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || isTimeout(err)
}

// exchange writes the preface me and reads the peer's, the write on a
// goroutine of its own so that neither waits for the other. It returns the
// peer's bytes (never nil once the write succeeded, nil if it failed but
// for a timeout) and the error that ended the exchange: nil for a whole
// preface, the write's error, ErrForeign as soon as the bytes cannot be
// one, or the read error, io.EOF turned into io.ErrUnexpectedEOF after
// part of a preface.
//
// It returns only once the write has: the connection's deadline bounds it.
// A failed read does not cut the write short, so that a peer of the wrong
// kind still learns what this end speaks (WIRE.md, "Mismatch").
func exchange(c net.Conn, me Preface) ([]byte, error) {
	wrote := make(chan error, 1)
	go func() {
		var out [Len]byte
		_, err := c.Write(me.Append(out[:0]))
		if err != nil {
			// The exchange has failed: end the read now rather than at
			// the deadline. The caller closes c.
			_ = c.SetReadDeadline(aLongTimeAgo)
		}
		wrote <- err
	}()
	got, rerr := readPreface(c)
	werr := <-wrote
	// A write that failed says more than the read it spoiled, as when the
	// write came first and the read never happened; except a write that
	// timed out, which only a peer that reads nothing causes (the preface
	// fits in any socket buffer), and whose read, if it timed out too,
	// says what, if anything, the peer sent.
	if werr != nil && (rerr == nil || !isTimeout(werr)) {
		return nil, fmt.Errorf("write: %w", werr)
	}
	return got, rerr
}

// readPreface reads the peer's preface, and no further: the bytes after it
// belong to whoever takes the connection next.
func readPreface(c net.Conn) ([]byte, error) {
	buf := make([]byte, Len)
	n := 0
	for n < Len {
		m, err := c.Read(buf[n:])
		n += m
		if _, perr := Parse(buf[:n]); errors.Is(perr, ErrForeign) {
			return buf[:n], perr
		}
		if err != nil && n < Len {
			if n > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf[:n], err
		}
	}
	return buf, nil
}

// Answer is the listening end of Exchange for a listener that serves more
// than zerodial on its port (WIRE.md, "One port"): it reads first, and
// writes the preface me only once the peer's bytes are a whole zerodial
// preface (of any protocol or version, so that a zerodial peer of the wrong
// kind still learns what this end speaks), so that a client of another
// protocol never receives a byte from it. A zerodial dialler writes its
// preface and reads the listener's at once, so the exchange still costs it
// one round trip.
//
// It returns the bytes read and, on success, the peer's preface parsed.
// The bytes are the peer's preface, or, when they depart from
// the magic, what had arrived by then (at least one byte, at most Len), for
// the caller to replay to whoever takes the connection. A foreign peer is
// told apart at its first byte that departs from the magic, without waiting
// for eight: the error is then an *Error whose Err is ErrForeign, and c
// keeps the deadline timeout set, so that the caller can go on reading
// within the same bound. Otherwise it is as Exchange: nil for the preface
// of proto (c is then left without a deadline), an *Error for another
// preface, a silent peer or one that closes first, an error matching
// ctx.Err() when ctx ends. On failure other than ErrForeign the caller must
// close c.
func Answer(ctx context.Context, c net.Conn, me Preface, peer string, timeout time.Duration) ([]byte, Preface, error) {
	name := ProtocolName(me.Protocol)
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, Preface{}, fmt.Errorf("%s: preface with %s: %w", name, peer, err)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	got, err := readPreface(c)
	if err == nil {
		var out [Len]byte
		if _, werr := c.Write(me.Append(out[:0])); werr != nil {
			err = fmt.Errorf("write: %w", werr)
			got = nil
		}
	}
	if !stop() {
		cerr := ctx.Err()
		if err != nil {
			cerr = fmt.Errorf("%w: %w", cerr, err)
		}
		return got, Preface{}, fmt.Errorf("%s: preface with %s: %w", name, peer, cerr)
	}
	p, err := settle(c, me, peer, timeout, got, err)
	return got, p, err
}

// Foreign reports whether err, from Answer, says the peer does not speak
// zerodial at all: its bytes departed from the magic. A silent peer, or one
// that sent part of the magic and stopped, is not foreign: nothing tells
// what it speaks.
func Foreign(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && errors.Is(pe.Err, ErrForeign)
}
