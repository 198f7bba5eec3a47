package httpzerodial

import (
	"errors"
	"net/http"
	"strings"

	"github.com/zerodial/transport/dispatch"
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

// fastTypes are the Content-Types, as clients send them, that connect-go's
// handlers serve with the Handler's codecs whatever the method (once the
// shape rule has had its say): a POST of one of them is never one of the
// bare refusals refusalWriter words.
var fastTypes = map[string]bool{
	"application/json": true, "application/json; charset=utf-8": true, "application/msgpack": true, "application/proto": true,
	"application/connect+json": true, "application/connect+msgpack": true, "application/connect+proto": true,
	"application/grpc": true, "application/grpc+json": true, "application/grpc+msgpack": true, "application/grpc+proto": true,
	"application/grpc-web": true, "application/grpc-web+json": true, "application/grpc-web+msgpack": true, "application/grpc-web+proto": true,
}

// shapeRefusal asks the Server to take a call of name in the shape the
// request has (unary or not), which its shape rule refuses: unavailable
// while it shuts down, in its own words, and otherwise the shape rule's
// code, invalid_argument, in words that say how to make the call over HTTP
// (dispatch's speak of its Go API). codec is the request's. No handler
// runs.
func (h *Handler) shapeRefusal(r *http.Request, name string, unary bool, codec string) error {
	ctx, call := r.Context(), incomingCall(r.Context(), name, nil)
	var err error
	if unary {
		_, _, err = h.srv.Invoke(ctx, call, func(any) error { return errShape })
	} else {
		_, err = h.srv.InvokeStream(ctx, call, refusedStream{})
	}
	var e *dispatch.Error
	if !errors.As(err, &e) || e.Code != dispatch.CodeInvalidArgument {
		return err
	}
	if unary {
		return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: "httpzerodial: " + name + " is a streaming method; POST its message as a Connect stream," +
			" Content-Type application/connect+" + codec + ", the message after a 5-byte prefix: a zero byte, then its length in 4 bytes, big-endian" +
			" (as `zerodial stream` does)"}
	}
	return &dispatch.Error{Code: dispatch.CodeInvalidArgument, Message: "httpzerodial: " + name + " is not a streaming method; POST its arguments as they are, Content-Type application/" + codec}
}

// errShape and refusedStream stand for a call's arguments and a stream's
// messages, which the shape rule refuses before any is read.
var errShape = errors.New("httpzerodial: a call of the other shape")

type refusedStream struct{}

func (refusedStream) Receive(any) error { return errShape }
func (refusedStream) Send(any) error    { return errShape }
func (refusedStream) Ready()            {}
