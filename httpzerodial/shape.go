package httpzerodial

import (
	"errors"
	"net/http"
	"strings"
)

// kind is what a request's Content-Type says of its protocol.
type kind int

const (
	kindOther  kind = iota // not a protocol's: connect-go refuses it (415)
	kindUnary              // a unary Connect call: the body is the message
	kindStream             // a Connect stream: enveloped messages
	kindGRPC               // gRPC or gRPC-Web: enveloped messages, the shape unsaid
)

// kindOf returns the protocol a Content-Type names, and the codec it names:
// "application/json" is a unary Connect call in json,
// "application/connect+msgpack; x=y" a Connect stream in msgpack,
// "application/grpc" gRPC in proto.
func kindOf(contentType string) (k kind, codec string) {
	ct, _, _ := strings.Cut(contentType, ";")
	sub, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/")
	if !ok {
		return kindOther, ""
	}
	for _, p := range []string{"grpc-web", "grpc"} {
		if rest, ok := strings.CutPrefix(sub, p); ok {
			if rest == "" {
				return kindGRPC, "proto"
			}
			if codec, ok := strings.CutPrefix(rest, "+"); ok {
				return kindGRPC, codec
			}
		}
	}
	if codec, ok := strings.CutPrefix(sub, "connect+"); ok {
		return kindStream, codec
	}
	return kindUnary, sub
}

// servedCodec tells whether the Handler's own codecs include the one
// named: a Content-Type naming another is connect-go's to answer (a codec
// given through WithConnectOptions, or a 415).
func servedCodec(codec string) bool {
	return codec == codecJSON || codec == codecMsgpack || codec == "proto"
}

// shapeRefusal asks the Server to take a call of name in the shape the
// request has (unary or not), which its shape rule refuses: its error, or
// unavailable while it shuts down, in its own words. No handler runs.
func (h *Handler) shapeRefusal(r *http.Request, name string, unary bool) error {
	ctx, info := r.Context(), callInfo(r.Context(), name)
	if unary {
		_, _, err := h.srv.Invoke(ctx, info, nil, func(any) error { return errShape })
		return err
	}
	_, err := h.srv.InvokeStream(ctx, info, nil, refusedStream{})
	return err
}

// errShape and refusedStream stand for a call's arguments and a stream's
// messages, which the shape rule refuses before any is read.
var errShape = errors.New("httpzerodial: a call of the other shape")

type refusedStream struct{}

func (refusedStream) Receive(any) error { return errShape }
func (refusedStream) Send(any) error    { return errShape }
