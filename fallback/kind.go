package fallback

import (
	"crypto/tls"
	"net"
)

// Kind is what a connection's first bytes say its client speaks.
type Kind uint8

// The kinds Classify tells apart.
const (
	// Unknown is none of the others.
	Unknown Kind = iota
	// Gob is net/rpc's default codec (rpc.Dial, rpc.NewClient): a gob
	// stream, whose first byte is the first message's length, 0x01-0x7F,
	// or 0xF8-0xFF for a count of length bytes to follow.
	Gob
	// JSON is JSON-RPC 1.0 (net/rpc/jsonrpc and other languages' clients):
	// optional whitespace, then '{' or '['.
	JSON
	// Msgpack is HashiCorp's msgpackrpc (net-rpc-msgpackrpc): a msgpack
	// map header first, 0x80-0x8F, 0xDE or 0xDF.
	Msgpack
	// HTTP is HTTP/1.x: a request line starting with a method and a space.
	HTTP
	// HTTP2 is HTTP/2 with prior knowledge: "PRI * HTTP/2.0" first.
	HTTP2
	// TLS is a TLS handshake record (0x16 0x03) on a listener that does
	// not terminate TLS itself.
	TLS
)

var kindNames = [...]string{Unknown: "unknown", Gob: "gob", JSON: "json", Msgpack: "msgpack", HTTP: "http", HTTP2: "http2", TLS: "tls"}

// String names k: "gob", "json", "msgpack", "http", "http2", "tls" or
// "unknown".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// PrefixLen bounds the bytes Classify looks at: with PrefixLen bytes it
// always decides. A connection is classified by at most PrefixLen bytes,
// whatever it sends.
const PrefixLen = 16

// The HTTP/1 methods a request line may start with, and the first bytes of
// HTTP/2's connection preface, which Classify must see whole.
var (
	httpMethods = [...]string{"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "}
	http2Prefix = "PRI * HTTP/2.0"
)

// Classify tells the kind of a connection from b, its first bytes. decided
// is false while more bytes could change the answer (k is then what b
// says so far): "P" may become "POST " or "PUT ", a gob length or the
// HTTP/2 preface. With PrefixLen bytes or more it always decides. The rules,
// first match wins (WIRE.md, "One port"):
//
//   - "PRI * HTTP/2.0": HTTP2;
//   - an HTTP/1 method and a space ("GET ", "POST ", "PUT ", "HEAD ",
//     "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "): HTTP;
//   - 0x16 0x03: TLS;
//   - optional whitespace (space, tab, CR, LF), then '{' or '[': JSON;
//   - first byte 0x80-0x8F, 0xDE or 0xDF: Msgpack;
//   - first byte 0x01-0x7F or 0xF8-0xFF: Gob;
//   - anything else (0x00, 0x90-0xDD, 0xE0-0xF7): Unknown.
//
// While b is a proper prefix of one of the first three, or whitespace only,
// Classify waits for more.
func Classify(b []byte) (k Kind, decided bool) {
	if len(b) == 0 {
		return Unknown, false
	}
	b = b[:min(len(b), PrefixLen)]
	more := false // b is a proper prefix of something longer that is decisive
	if n := min(len(b), len(http2Prefix)); string(b[:n]) == http2Prefix[:n] {
		if n == len(http2Prefix) {
			return HTTP2, true
		}
		more = true
	}
	for _, m := range httpMethods {
		n := min(len(b), len(m))
		if string(b[:n]) != m[:n] {
			continue
		}
		if n == len(m) {
			return HTTP, true
		}
		more = true
	}
	if b[0] == 0x16 {
		if len(b) == 1 {
			more = true
		} else if b[1] == 0x03 {
			return TLS, true
		}
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	switch {
	case i == len(b):
		more = true
	case b[i] == '{' || b[i] == '[':
		return JSON, true
	}
	k = byFirstByte(b[0])
	return k, !more || len(b) == PrefixLen
}

// byFirstByte is the kind of a connection whose first byte is c, when no
// longer rule matched.
func byFirstByte(c byte) Kind {
	switch {
	case c >= 0x80 && c <= 0x8F, c == 0xDE, c == 0xDF:
		return Msgpack
	case c >= 0x01 && c <= 0x7F, c >= 0xF8:
		return Gob
	}
	return Unknown
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// KindOf returns the kind of a connection a Listener handed out: what its
// first bytes said, or, for a TLS connection handed on without reading
// because its client negotiated a protocol by ALPN, what that protocol is
// ("h2": HTTP2, "http/1.1" and "http/1.0": HTTP, others Unknown). Any other
// connection is Unknown.
func KindOf(c net.Conn) Kind {
	switch c := c.(type) {
	case *conn:
		return c.kind
	case *tls.Conn:
		k, _ := alpnKind(c)
		return k
	}
	return Unknown
}

// alpnKind returns the kind of a TLS connection by the protocol its client
// negotiated, and whether it negotiated one.
func alpnKind(c *tls.Conn) (Kind, bool) {
	switch p := c.ConnectionState().NegotiatedProtocol; p {
	case "":
		return Unknown, false
	case "h2":
		return HTTP2, true
	case "http/1.1", "http/1.0":
		return HTTP, true
	}
	return Unknown, true
}
