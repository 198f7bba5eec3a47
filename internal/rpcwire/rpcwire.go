// Package rpcwire holds the RPC layer of the wire format (WIRE.md, section
// 3): the header keys of requests, responses and Cancel messages, and the
// parsing and formatting of their values. The codec package's net/rpc
// adapters and the dispatch package both speak it through this one package,
// so that a key or a rule has one definition.
package rpcwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Header keys. A request carries ServiceMethod, Seq, and optionally
// ContentType, Timeout and metadata (MetadataPrefix); a response carries
// ServiceMethod and Seq, plus Error and optionally ErrorCode and
// ErrorDetails when the call failed; a Cancel message carries Seq and Cancel. The frames of a stream
// carry Seq and Stream, whose value says which frame it is (StreamOpen,
// StreamMsg, StreamEnd, StreamWindow, StreamReady), and a window frame
// carries Window.
const (
	// ServiceMethod names the method called, as "Service.Method".
	ServiceMethod = "Service-Method"
	// Seq is the call's sequence number in decimal, chosen by the client
	// and echoed by the server, so that responses may come in any order.
	Seq = "Seq"
	// ContentType is the name of the codec of a request's body; msgpack
	// when absent.
	ContentType = "Content-Type"
	// Timeout is the caller's remaining time in nanoseconds, decimal.
	// Relative, so the two clocks need not agree.
	Timeout = "Timeout"
	// MetadataPrefix starts the key of every metadata entry.
	MetadataPrefix = "Md-"
	// Error holds the error text of a failed call; absent on success.
	Error = "Error"
	// ErrorCode holds the failed call's code next to Error, when it has one.
	ErrorCode = "Error-Code"
	// ErrorDetails holds the failed call's details next to Error, when it
	// has any, as AppendDetails encodes them.
	ErrorDetails = "Error-Details"
	// Cancel marks a message that cancels the call its Seq names.
	Cancel = "Cancel"
	// Stream marks a frame of a stream; its value is the frame's kind.
	Stream = "Stream"
	// Window is the credit, in bytes, that a window frame grants: the
	// receiver's whole window in the first one a receiver sends (and in
	// the open frame), the bytes it has consumed in every later one.
	Window = "Window"
	// Ready, on an open frame, says the caller takes a ready frame; on the
	// server's first window frame, that one will come (or the end first).
	// Its value is ReadyYes.
	Ready = "Ready"
	// Drain marks a frame with no Seq: from the server, the notice that it
	// is shutting down (every new call would be refused); from the
	// caller, the acknowledgement that it will send no new call.
	Drain = "Drain"
)

// The values of the Stream header.
const (
	// StreamOpen opens a stream (caller to server), in place of a request.
	StreamOpen = "open"
	// StreamMsg carries one message of a stream, either way.
	StreamMsg = "msg"
	// StreamEnd ends one side: from the caller, its half-close; from the
	// server, the end of the stream, with Error and ErrorCode if the
	// handler failed.
	StreamEnd = "end"
	// StreamWindow grants credit (Window), either way.
	StreamWindow = "window"
	// StreamReady says the handler is ready (server to caller): it has
	// said so, or is about to send its first message. Sent only to a
	// caller whose open frame carried Ready.
	StreamReady = "ready"
)

// ReadyYes is the value of the Ready header.
const ReadyYes = "1"

// MaxWindow bounds a Window value, so that credit fits an int on every
// platform with room to add to it.
const MaxWindow = 1 << 30

// ErrMalformed is wrapped by the errors of the parsers below.
var ErrMalformed = errors.New("malformed RPC header")

// decimal reports whether s is a non-empty run of ASCII digits, the only
// form WIRE.md allows for numbers (no sign, no spaces), which strconv alone
// would not enforce ("+5", "-0").
func decimal(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ParseSeq reads the sequence number from h.
func ParseSeq(h map[string]string) (uint64, error) {
	s, ok := h[Seq]
	return ParseSeqValue(s, ok)
}

// ParseSeqValue reads a sequence number from the value of a Seq header,
// present telling whether the header was there at all: the same as
// ParseSeq, for a reader that has looked the header up already.
func ParseSeqValue(s string, present bool) (uint64, error) {
	if !present {
		return 0, fmt.Errorf("%w: missing %s header", ErrMalformed, Seq)
	}
	if n, ok := shortDecimal(s); ok {
		return n, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || !decimal(s) {
		return 0, fmt.Errorf("%w: %s header %q is not a decimal uint64", ErrMalformed, Seq, s)
	}
	return n, nil
}

// shortDecimal parses s when it is 1 to 19 decimal digits, which no
// uint64 overflows, and reports false for anything else, which
// strconv.ParseUint then judges: the same numbers at a tenth of the cost
// for the short sequence numbers every call carries, read at both ends of
// each (BenchmarkUnary/zerodial-memory). TestShortDecimal holds it to
// strconv.ParseUint.
func shortDecimal(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	var n uint64
	for i := range len(s) {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + uint64(c)
	}
	return n, true
}

func FormatSeq(n uint64) string { return strconv.FormatUint(n, 10) }

// FormatTimeout is d as Timeout carries it; a negative d is sent as 0.
func FormatTimeout(d time.Duration) string {
	return strconv.FormatInt(int64(max(d, 0)), 10)
}

// ParseTimeout reads a Timeout value: a decimal count of nanoseconds, 0 or
// more.
func ParseTimeout(s string) (time.Duration, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || !decimal(s) {
		return 0, fmt.Errorf("%w: %s header %q is not a decimal count of nanoseconds", ErrMalformed, Timeout, s)
	}
	return time.Duration(n), nil
}

// FormatWindow is n as Window carries it.
func FormatWindow(n int) string { return strconv.Itoa(n) }

// ParseWindow reads a Window value: a decimal count of bytes, from 1 to
// MaxWindow (a grant of nothing is never sent).
func ParseWindow(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || !decimal(s) || n < 1 || n > MaxWindow {
		return 0, fmt.Errorf("%w: %s header %q is not a decimal count of bytes from 1 to %d", ErrMalformed, Window, s, MaxWindow)
	}
	return n, nil
}

// Detail is one detail of an error as ErrorDetails carries it: the name of
// its type and its value's encoding.
type Detail struct {
	Type  string
	Value []byte
}

// DetailsLen is the length of the ErrorDetails value that AppendDetails
// makes of ds, computed without making it, so that a bound can be checked
// first.
func DetailsLen(ds []Detail) int {
	n := 0
	for _, d := range ds {
		n += uvarintLen(len(d.Type)) + len(d.Type) + uvarintLen(len(d.Value)) + len(d.Value)
	}
	return n
}

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

// AppendDetails appends the ErrorDetails value of ds to dst: for each
// detail in order, its type's length as a uvarint, its type, its value's
// length as a uvarint and its value — the layout of a header block's
// entries (WIRE.md, section 1).
func AppendDetails(dst []byte, ds []Detail) []byte {
	for _, d := range ds {
		dst = binary.AppendUvarint(dst, uint64(len(d.Type)))
		dst = append(dst, d.Type...)
		dst = binary.AppendUvarint(dst, uint64(len(d.Value)))
		dst = append(dst, d.Value...)
	}
	return dst
}

// ParseDetails reads an ErrorDetails value. A length that runs past the
// value, or a truncated uvarint, is an error: no detail is allocated for
// more bytes than s holds.
func ParseDetails(s string) ([]Detail, error) {
	var ds []Detail
	for len(s) > 0 {
		typ, rest, ok := cutField(s)
		if !ok {
			return nil, fmt.Errorf("%w: %s value: a type runs past its end", ErrMalformed, ErrorDetails)
		}
		val, rest, ok := cutField(rest)
		if !ok {
			return nil, fmt.Errorf("%w: %s value: a value runs past its end", ErrMalformed, ErrorDetails)
		}
		ds = append(ds, Detail{Type: typ, Value: []byte(val)})
		s = rest
	}
	return ds, nil
}

// cutField reads one length-prefixed field off the front of s.
func cutField(s string) (field, rest string, ok bool) {
	n, k := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if k <= 0 || n > uint64(len(s)-k) {
		return "", "", false
	}
	return s[k : k+int(n)], s[k+int(n):], true
}
