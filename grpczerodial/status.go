package grpczerodial

import (
	"context"
	"errors"
	"io"
	"strings"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// Errors cross as dispatch's *Error, whose codes are gRPC's by name: a
// handler's status becomes an *Error with the same code, message and
// details (each google.protobuf.Any a dispatch.ErrorDetail whose Type is
// the Any's type URL and whose Value its bytes), and the caller's
// status.FromError reads them back, on every path.

var toCode = map[dispatch.Code]codes.Code{
	dispatch.CodeCanceled:           codes.Canceled,
	dispatch.CodeUnknown:            codes.Unknown,
	dispatch.CodeInvalidArgument:    codes.InvalidArgument,
	dispatch.CodeDeadlineExceeded:   codes.DeadlineExceeded,
	dispatch.CodeNotFound:           codes.NotFound,
	dispatch.CodeAlreadyExists:      codes.AlreadyExists,
	dispatch.CodePermissionDenied:   codes.PermissionDenied,
	dispatch.CodeResourceExhausted:  codes.ResourceExhausted,
	dispatch.CodeFailedPrecondition: codes.FailedPrecondition,
	dispatch.CodeAborted:            codes.Aborted,
	dispatch.CodeOutOfRange:         codes.OutOfRange,
	dispatch.CodeUnimplemented:      codes.Unimplemented,
	dispatch.CodeInternal:           codes.Internal,
	dispatch.CodeUnavailable:        codes.Unavailable,
	dispatch.CodeDataLoss:           codes.DataLoss,
	dispatch.CodeUnauthenticated:    codes.Unauthenticated,
}

var fromCode = func() map[codes.Code]dispatch.Code {
	m := make(map[codes.Code]dispatch.Code, len(toCode))
	for d, g := range toCode {
		m[g] = d
	}
	return m
}()

// toDispatchError is what a gRPC handler's error becomes for dispatch: a
// status (anything with a GRPCStatus method) an *Error of the same code,
// message and details; an *Error, or any other error, as it is, which
// dispatch maps as every path does (unknown, or the context's codes).
func toDispatchError(err error) error {
	if err == nil {
		return nil
	}
	var de *dispatch.Error
	if errors.As(err, &de) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	if st.Code() == codes.OK {
		return nil // a status of OK is no error, as gRPC's server treats it
	}
	code, ok := fromCode[st.Code()]
	if !ok {
		code = dispatch.CodeUnknown
	}
	e := &dispatch.Error{Code: code, Message: st.Message()}
	if ds := st.Proto().GetDetails(); len(ds) > 0 {
		out := make([]dispatch.ErrorDetail, len(ds))
		for i, d := range ds {
			out[i] = dispatch.ErrorDetail{Type: d.GetTypeUrl(), Value: d.GetValue()}
		}
		e = e.WithDetails(out...)
	}
	return e
}

// notFoundPrefix starts dispatch's words for a method or service it does
// not have, which gRPC reports as Unimplemented.
const notFoundPrefix = "rpc: can't find "

// toStatusError is what a caller gets for dispatch's err: a status error
// with the *Error's code, message and details; a context's error as
// status.FromContextError words it; a message over the frame limit, which
// was not sent, as ResourceExhausted (grpc-go's code for a message over
// its limit); any other failure of the path (a connection lost, a Client
// closed) as Unavailable, as gRPC reports a transport's failure. The
// status error wraps err (statusError): errors.Is and errors.As see
// dispatch's sentinels (ErrShutdown, transport.ErrFrameTooLarge, the
// context's errors) and its *Error, with the details of its own that a
// status cannot carry (dispatch.ErrorDetailAs).
func toStatusError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		return err
	}
	var de *dispatch.Error
	if !errors.As(err, &de) {
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return &statusError{status.FromContextError(err), err}
		case errors.Is(err, transport.ErrFrameTooLarge):
			return &statusError{status.New(codes.ResourceExhausted, err.Error()), err}
		}
		return &statusError{status.New(codes.Unavailable, err.Error()), err}
	}
	code, ok := toCode[de.Code]
	if !ok {
		code = codes.Unknown
	}
	if de.Code == dispatch.CodeNotFound && strings.HasPrefix(de.Message, notFoundPrefix) {
		code = codes.Unimplemented // the router's: no such method or service
	}
	p := &spb.Status{Code: int32(code), Message: de.Message}
	for _, d := range de.Details() {
		url := d.Type
		if !strings.Contains(url, "/") {
			// A detail of dispatch's own (msgpack), no protobuf Any; or
			// one that crossed HTTP, which gives the Any's type name
			// alone (httpzerodial.Dial's Client): a Protobuf message
			// this program knows is taken for what it is.
			if _, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(url)); err != nil {
				continue
			}
			url = "type.googleapis.com/" + url
		}
		p.Details = append(p.Details, &anypb.Any{TypeUrl: url, Value: d.Value})
	}
	return &statusError{status.FromProto(p), err}
}

// statusError is a status (GRPCStatus, which status.FromError and
// status.Code read) that wraps the error dispatch gave, for errors.Is and
// errors.As. Its text is the status's, as grpc-go words it.
type statusError struct {
	st  *status.Status
	err error
}

func (e *statusError) Error() string              { return e.st.Err().Error() }
func (e *statusError) GRPCStatus() *status.Status { return e.st }

// Unwrap is the error dispatch gave, but never one that matches io.EOF:
// dispatch words a connection the server closed as its end (io.EOF), and
// a gRPC stream's RecvMsg says a clean end with io.EOF, so a caller's
// errors.Is(err, io.EOF) took that failure for the stream's end
// (TestStatusNeverEOF; the conformance suite's "a stream over a frame limit
// says why" over the ClientConn, 1 run in 30).
func (e *statusError) Unwrap() error {
	if errors.Is(e.err, io.EOF) {
		return notEOF{e.err}
	}
	return e.err
}

// notEOF is err for errors.Is and errors.As, but for io.EOF.
type notEOF struct{ err error }

func (n notEOF) Error() string        { return n.err.Error() }
func (n notEOF) Is(target error) bool { return target != io.EOF && errors.Is(n.err, target) }
func (n notEOF) As(target any) bool   { return errors.As(n.err, target) }
