package dispatch

import (
	"context"
	"errors"
	"net/rpc"
)

// Code classifies an Error. It travels on the wire as text (WIRE.md), so a
// handler may use codes of its own beside these.
type Code string

// Codes set by dispatch itself.
const (
	// CodeUnknown is the code of a handler error that carries none.
	CodeUnknown Code = ""
	// CodeNotFound: the service or method does not exist.
	CodeNotFound Code = "not_found"
	// CodeInvalidArgument: an ill-formed method name, or arguments that
	// cannot be decoded.
	CodeInvalidArgument Code = "invalid_argument"
	// CodeInternal: the handler panicked, or its reply could not be encoded.
	CodeInternal Code = "internal"
	// CodeDeadlineExceeded: the caller's deadline passed. Such errors match
	// context.DeadlineExceeded.
	CodeDeadlineExceeded Code = "deadline_exceeded"
	// CodeCanceled: the caller's context was cancelled. Such errors match
	// context.Canceled.
	CodeCanceled Code = "canceled"
	// CodeUnavailable: the server is shutting down.
	CodeUnavailable Code = "unavailable"
)

// Error is an error produced by a call: by the handler or by the server on
// its behalf. The caller receives the same Code and Message on every path;
// test for it with errors.As. A handler may return an *Error to choose the
// code; any other error arrives with CodeUnknown, or with
// CodeDeadlineExceeded or CodeCanceled when it matches the context errors.
type Error struct {
	Code    Code
	Message string
}

// Error returns the message alone, as net/rpc does.
func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, context.DeadlineExceeded) and
// errors.Is(err, context.Canceled) hold for errors of those codes, on every
// path.
func (e *Error) Is(target error) bool {
	switch target {
	case context.DeadlineExceeded:
		return e.Code == CodeDeadlineExceeded
	case context.Canceled:
		return e.Code == CodeCanceled
	}
	return false
}

// ErrShutdown is returned for calls on a closed Client, and for calls in
// flight when the Client is closed or its connection fails. It is net/rpc's
// error, so existing checks keep working.
var ErrShutdown = rpc.ErrShutdown

// ErrNilReply is returned, on every path, when reply is nil or a nil
// pointer. It is not an *Error: no call was made.
var ErrNilReply = errors.New("dispatch: reply must be a non-nil pointer")

// toError maps whatever a call ended with to the *Error the caller
// receives. Every path goes through it, so the same failure reads the same.
func toError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return nil // a nil *Error in a non-nil error: success, as the handler meant
		}
		return &Error{Code: e.Code, Message: e.Message}
	}
	code := CodeUnknown
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = CodeCanceled
	}
	return &Error{Code: code, Message: err.Error()}
}

// ctxError is what a call returns when the caller's context ends first.
func ctxError(ctx context.Context) *Error {
	return toError(ctx.Err())
}
