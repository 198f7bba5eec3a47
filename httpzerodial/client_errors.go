package httpzerodial

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"connectrpc.com/connect"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// fromConnect returns an error of connect-go's client as a Client of
// dispatch reports it: what the server answered as a *dispatch.Error with
// its code, message and details (DetailTypeURLPrefix); a failure to reach
// the server, or of the connection under the request, as its cause (the
// dispatch.Client says the connection failed, and a Client of replicas
// tries another); a reply over the read limit as a failure matching
// transport.ErrFrameTooLarge; anything else connect-go's client says (a stream over
// HTTP/1.1, a response it cannot read) as a *dispatch.Error of its code.
func fromConnect(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	if !connect.IsWireError(err) {
		cause := ce.Unwrap()
		if u, ok := errors.AsType[*unreachedError](cause); ok && ce.Code() == connect.CodeUnavailable {
			return u.err
		}
		if networkFailure(cause) {
			return cause
		}
		if ce.Code() == connect.CodeResourceExhausted {
			// A reply or message over the read limit, which connect-go's
			// client refuses to read: as a frame over the limit ends a
			// connection of zerodial's wire.
			return fmt.Errorf("%w: %s", transport.ErrFrameTooLarge, ce.Message())
		}
	}
	e := &dispatch.Error{Code: DispatchCode(ce.Code()), Message: ce.Message()}
	if ds := ce.Details(); len(ds) > 0 {
		out := make([]dispatch.ErrorDetail, len(ds))
		for i, d := range ds {
			out[i] = dispatch.ErrorDetail{Type: d.Type(), Value: d.Bytes()}
		}
		e = e.WithDetails(out...)
	}
	return e
}

// reachClient is the connect.HTTPClient of a Client's connect-go clients.
// An error of its Do came with no response: it is marked as a failure to
// reach the server (unreachedError), a mark connect-go keeps as its
// error's cause, so that a certificate refused, or a port that does not
// speak HTTP, reads as a failure of the connection (fromConnect) rather
// than as an error of code unavailable, which a server's handler can
// answer too.
type reachClient struct{ hc *http.Client }

func (c reachClient) Do(r *http.Request) (*http.Response, error) {
	res, err := c.hc.Do(r)
	if ue, ok := err.(*url.Error); ok {
		ue.Err = &unreachedError{ue.Err}
	}
	return res, err
}

// unreachedError is an error of reachClient's Do.
type unreachedError struct{ err error }

func (u *unreachedError) Error() string { return u.err.Error() }
func (u *unreachedError) Unwrap() error { return u.err }

// networkFailure reports whether err is a failure of the network under a
// request: a dial, a read or write of its connection, the peer gone.
func networkFailure(err error) bool {
	var ne net.Error
	return err != nil && (errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE))
}

// requestMetadata sets md as the headers of a request, or refuses a key
// or value a header cannot carry: net/http would refuse the request in
// words that do not say it was the metadata. Keys the protocols reserve
// are left out, as they are never metadata on the Handler's side. A binary
// key's value (a name ending in "-bin") goes in base64, as the Handler
// reads it, so that it may hold any bytes.
func requestMetadata(h http.Header, md dispatch.Metadata) error {
	for k, v := range md {
		if !validName(k) {
			return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: fmt.Sprintf("httpzerodial: the metadata key %q cannot be an HTTP header name (RFC 9110's token)", k)}
		}
		if strings.HasSuffix(strings.ToLower(k), binarySuffix) {
			v = connect.EncodeBinaryHeader([]byte(v))
		} else if !validValue(v) {
			return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: fmt.Sprintf("httpzerodial: the value of the metadata key %q has a control character, which an HTTP header cannot carry", k)}
		}
		if !reserved(strings.ToLower(k)) {
			h.Set(k, v)
		}
	}
	return nil
}
