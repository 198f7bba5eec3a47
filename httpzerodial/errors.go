package httpzerodial

import (
	"errors"

	"connectrpc.com/connect"

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

// connectError returns err, nil or a *dispatch.Error from the Server, as
// connect-go's error, with md as its metadata (headers or trailers).
func connectError(err error, md dispatch.Metadata) error {
	if err == nil {
		return nil
	}
	var e *dispatch.Error
	if !errors.As(err, &e) {
		e = &dispatch.Error{Message: err.Error()}
	}
	ce := connect.NewError(ConnectCode(e.Code), errors.New(e.Message))
	setMetadata(ce.Meta(), md)
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
