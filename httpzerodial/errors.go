package httpzerodial

import (
	"errors"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/zerodial/transport/dispatch"
)

// ConnectCode returns the connect-go code of the dispatch code c: the one
// of the same name, connect.CodeUnknown for dispatch.CodeUnknown and for a
// code of a handler's own that Connect does not know.
func ConnectCode(c dispatch.Code) connect.Code {
	var cc connect.Code
	if c == dispatch.CodeUnknown || cc.UnmarshalText([]byte(c)) != nil {
		return connect.CodeUnknown
	}
	return cc
}

// DispatchCode returns the dispatch code of the connect-go code c: the one
// of the same name, dispatch.CodeUnknown for connect.CodeUnknown.
func DispatchCode(c connect.Code) dispatch.Code {
	if c == connect.CodeUnknown {
		return dispatch.CodeUnknown
	}
	return dispatch.Code(c.String())
}

// DetailTypeURLPrefix opens the type URL of every error detail the HTTP
// path sends. A *dispatch.Error's detail (dispatch.ErrorDetail) travels as
// a google.protobuf.Any whose type URL is this prefix and the detail's Type,
// and whose value is the detail's Value as it is: msgpack, not Protobuf —
// the prefix says so, rather than pass the bytes off as a Protobuf message.
// connect-go's client sees it as a *connect.ErrorDetail whose Type is the
// detail's Type (connect-go keeps what follows the URL's last slash) and
// whose Bytes are the msgpack value (its Value, which looks the type up in
// the Protobuf registry, finds none); grpc-go's sees the Any in the
// status's details (status.Convert(err).Proto().Details). The value is
// read back with dispatch.ErrorDetail{Type: d.Type(), Value: d.Bytes()}.
// The Connect protocol carries only what follows the last slash, so a
// Connect client's Any has connect-go's default prefix instead. Dial's
// Client reads every detail back so, a gRPC status's details too (their
// type name alone, which grpczerodial's ClientConn takes for the Protobuf
// message it names, when the program knows it).
const DetailTypeURLPrefix = "zerodial/msgpack/"

// connectError returns err, nil or a *dispatch.Error from the Server, as
// connect-go's error, with md as its metadata (headers or trailers) and
// the *dispatch.Error's details as its (DetailTypeURLPrefix).
func connectError(err error, md dispatch.Metadata) error {
	if err == nil {
		return nil
	}
	var e *dispatch.Error
	if !errors.As(err, &e) {
		e = &dispatch.Error{Message: err.Error()}
	}
	ce := connect.NewError(ConnectCode(e.Code), errors.New(e.Message))
	for _, d := range e.Details() {
		url := DetailTypeURLPrefix + d.Type
		if strings.Contains(d.Type, "/") {
			// A type URL already: a Protobuf message's Any, as
			// grpczerodial carries a gRPC status's details, sent as it
			// came.
			url = d.Type
		}
		// An Any is taken as it is: NewErrorDetail cannot fail.
		cd, _ := connect.NewErrorDetail(&anypb.Any{TypeUrl: url, Value: d.Value})
		ce.AddDetail(cd)
	}
	setMetadata(ce.Meta(), ce.Meta(), md, nil)
	return ce
}

// dispatchError returns what connect-go says of a message it could not
// read (too large, badly compressed, ...) as a *dispatch.Error with its
// code, so that a handler sees it as it would on any path.
func dispatchError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return &dispatch.Error{Code: DispatchCode(ce.Code()), Message: ce.Message()}
	}
	return err
}
