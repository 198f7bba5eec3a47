package codec

import (
	"fmt"
	"strconv"
)

// Header keys of the RPC wire format. A request is one Message carrying
// HeaderServiceMethod, HeaderSeq and HeaderContentType, its body the encoding
// of the call's arguments. A response is one Message carrying
// HeaderServiceMethod and HeaderSeq, plus HeaderError when the call failed;
// its body is the encoding of the reply, or empty when the call failed.
const (
	// HeaderServiceMethod names the method called, as "Service.Method".
	HeaderServiceMethod = "Service-Method"
	// HeaderSeq is the call's sequence number in decimal, chosen by the
	// client and echoed by the server so that responses can arrive in any
	// order.
	HeaderSeq = "Seq"
	// HeaderError holds the error text of a failed call. It is absent when
	// the call succeeded.
	HeaderError = "Error"
	// HeaderContentType is the Name of the codec that encoded a request's
	// body.
	HeaderContentType = "Content-Type"
	// HeaderCancel marks a message that cancels the call named by its Seq
	// (WIRE.md). net/rpc cannot cancel a call, so the server adapter skips
	// such messages.
	HeaderCancel = "Cancel"
)

// parseSeq reads the sequence number from h.
func parseSeq(h map[string]string) (uint64, error) {
	s, ok := h[HeaderSeq]
	if !ok {
		return 0, fmt.Errorf("%w: missing %s header", ErrMalformedHeader, HeaderSeq)
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s header %q is not a decimal uint64", ErrMalformedHeader, HeaderSeq, s)
	}
	return seq, nil
}
