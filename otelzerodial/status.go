package otelzerodial

import (
	"context"
	"errors"
	"strings"

	"github.com/zerodial/transport/dispatch"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// outcome is how a call ended, as a span and a measurement record it.
type outcome struct {
	status  string // rpc.response.status_code; "" when no status came back
	errType string // error.type; "" unless the call failed
	message string // the span's status description when it failed
	// other: the Server did not recognise the method (Client only).
	other bool
}

func (o outcome) failed() bool { return o.errType != "" }

// codeOf returns the code and message an error ends a call with, as
// dispatch maps it for the caller (dispatch's toError), and false for no
// error — nil, or a nil *dispatch.Error, which dispatch takes for success.
func codeOf(err error) (dispatch.Code, string, bool) {
	if err == nil {
		return "", "", false
	}
	if e, ok := errors.AsType[*dispatch.Error](err); ok {
		if e == nil {
			return "", "", false
		}
		return e.Code, e.Message, true
	}
	code := dispatch.CodeUnknown
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		code = dispatch.CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = dispatch.CodeCanceled
	}
	return code, err.Error(), true
}

// statusOK is rpc.response.status_code for a call that succeeded.
const statusOK = "OK"

// statusName spells code as rpc.response.status_code records it: the
// well-known codes as gRPC spells its own, a service's own code as it is.
func statusName(code dispatch.Code) string {
	switch code {
	case dispatch.CodeUnknown:
		return "UNKNOWN"
	case dispatch.CodeCanceled:
		return "CANCELLED"
	case dispatch.CodeInvalidArgument:
		return "INVALID_ARGUMENT"
	case dispatch.CodeDeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case dispatch.CodeNotFound:
		return "NOT_FOUND"
	case dispatch.CodeAlreadyExists:
		return "ALREADY_EXISTS"
	case dispatch.CodePermissionDenied:
		return "PERMISSION_DENIED"
	case dispatch.CodeResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case dispatch.CodeFailedPrecondition:
		return "FAILED_PRECONDITION"
	case dispatch.CodeAborted:
		return "ABORTED"
	case dispatch.CodeOutOfRange:
		return "OUT_OF_RANGE"
	case dispatch.CodeUnimplemented:
		return "UNIMPLEMENTED"
	case dispatch.CodeInternal:
		return "INTERNAL"
	case dispatch.CodeUnavailable:
		return "UNAVAILABLE"
	case dispatch.CodeDataLoss:
		return "DATA_LOSS"
	case dispatch.CodeUnauthenticated:
		return "UNAUTHENTICATED"
	}
	return string(code)
}

// serverFailure reports whether a Server that answered code failed, by the
// gRPC conventions: codes that say the caller asked for something it may
// not have (NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED, ...) are the
// handler doing its job. A code of the service's own, which the conventions
// cannot classify, counts as a failure.
func serverFailure(code dispatch.Code) bool {
	switch code {
	case dispatch.CodeCanceled, dispatch.CodeInvalidArgument, dispatch.CodeNotFound,
		dispatch.CodeAlreadyExists, dispatch.CodePermissionDenied, dispatch.CodeResourceExhausted,
		dispatch.CodeFailedPrecondition, dispatch.CodeAborted, dispatch.CodeOutOfRange,
		dispatch.CodeUnauthenticated:
		return false
	}
	return true
}

// serverOutcome is how a Server's handler ended a call that returned err.
func serverOutcome(err error) outcome {
	code, msg, failed := codeOf(err)
	if !failed {
		return outcome{status: statusOK}
	}
	o := outcome{status: statusName(code)}
	if serverFailure(code) {
		o.errType, o.message = o.status, msg
	}
	return o
}

// The wording of dispatch's router for a method it does not have (net/rpc's).
const (
	noService = "rpc: can't find service "
	noMethod  = "rpc: can't find method "
	illFormed = "rpc: service/method request ill-formed: "
)

// clientOutcome is how a Client's call that returned err ended. Every error
// is a failure on the Client.
func clientOutcome(err error) outcome {
	if err == nil {
		return outcome{status: statusOK}
	}
	if e, ok := errors.AsType[*dispatch.Error](err); ok {
		if e == nil {
			return outcome{status: statusOK}
		}
		s := statusName(e.Code)
		o := outcome{status: s, errType: s, message: e.Message}
		switch e.Code {
		case dispatch.CodeNotFound:
			o.other = strings.HasPrefix(e.Message, noService) || strings.HasPrefix(e.Message, noMethod)
		case dispatch.CodeInvalidArgument:
			o.other = strings.HasPrefix(e.Message, illFormed)
		}
		return o
	}
	// No status came back: the call failed before, or on the way.
	o := outcome{message: err.Error()}
	switch {
	case errors.Is(err, dispatch.ErrShutdown):
		o.errType = "shutdown"
	case errors.Is(err, dispatch.ErrNilReply):
		o.errType = "nil_reply"
	default:
		o.errType = semconv.ErrorType(err).Value.AsString()
	}
	return o
}
