// Package rpcwire holds the RPC layer of the wire format (WIRE.md, section
// 3): the header keys of requests, responses and Cancel messages, and the
// parsing and formatting of their values. The codec package's net/rpc
// adapters and the dispatch package both speak it through this one package,
// so that a key or a rule has one definition.
package rpcwire

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Header keys. A request carries ServiceMethod, Seq, and optionally
// ContentType, Timeout and metadata (MetadataPrefix); a response carries
// ServiceMethod and Seq, plus Error and optionally ErrorCode when the call
// failed; a Cancel message carries Seq and Cancel. The frames of a stream
// carry Seq and Stream, whose value says which frame it is (StreamOpen,
// StreamMsg, StreamEnd, StreamWindow), and a window frame carries Window.
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
	// Cancel marks a message that cancels the call its Seq names.
	Cancel = "Cancel"
	// Stream marks a frame of a stream; its value is the frame's kind.
	Stream = "Stream"
	// Window is the credit, in bytes, that a window frame grants: the
	// receiver's whole window in the first one a receiver sends (and in
	// the open frame), the bytes it has consumed in every later one.
	Window = "Window"
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
)

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
	if !ok {
		return 0, fmt.Errorf("%w: missing %s header", ErrMalformed, Seq)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || !decimal(s) {
		return 0, fmt.Errorf("%w: %s header %q is not a decimal uint64", ErrMalformed, Seq, s)
	}
	return n, nil
}

// FormatSeq is a sequence number as Seq carries it.
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
