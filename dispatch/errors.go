package dispatch

import (
	"context"
	"errors"
	"io"
	"net/rpc"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// Code classifies an Error. It travels on the wire as text (WIRE.md), so a
// handler may use codes of its own beside these.
//
// Retrying: a caller may retry a call that failed with CodeUnavailable
// without more thought — the call was refused before its handler ran
// (the server was shutting down), or the server is momentarily unable to
// serve. CodeResourceExhausted may be retried after a pause (dispatch uses
// it for a connection with too many calls in flight). CodeAborted may be
// retried at a higher level (the whole read-modify-write). Any other code
// says something a retry of the same call will not change, or (CodeUnknown,
// CodeInternal, CodeDeadlineExceeded, CodeCanceled) that the call may have
// taken effect: retry those only if the method is idempotent.
type Code string

// The well-known codes, as gRPC and Connect name them. dispatch sets some
// itself (said below); a handler chooses any by returning an *Error.
const (
	// CodeUnknown is the code of a handler error that carries none.
	CodeUnknown Code = ""
	// CodeCanceled: the caller's context was cancelled. Such errors match
	// context.Canceled.
	CodeCanceled Code = "canceled"
	// CodeInvalidArgument: an ill-formed method name, or arguments that
	// cannot be decoded.
	CodeInvalidArgument Code = "invalid_argument"
	// CodeDeadlineExceeded: the caller's deadline passed. Such errors match
	// context.DeadlineExceeded.
	CodeDeadlineExceeded Code = "deadline_exceeded"
	// CodeNotFound: the service or method does not exist (or, from a
	// handler, what the call names does not).
	CodeNotFound Code = "not_found"
	// CodeAlreadyExists: what the call would create exists already.
	CodeAlreadyExists Code = "already_exists"
	// CodePermissionDenied: the caller may not do this.
	CodePermissionDenied Code = "permission_denied"
	// CodeResourceExhausted: a limit was reached; dispatch uses it when a
	// connection has as many calls in flight as the server allows
	// (WithMaxCallsPerConn).
	CodeResourceExhausted Code = "resource_exhausted"
	// CodeFailedPrecondition: the system is not in the state the call needs.
	CodeFailedPrecondition Code = "failed_precondition"
	// CodeAborted: the call was aborted, typically by a concurrency conflict.
	CodeAborted Code = "aborted"
	// CodeOutOfRange: the call went past a valid range.
	CodeOutOfRange Code = "out_of_range"
	// CodeUnimplemented: the method exists but is not implemented.
	CodeUnimplemented Code = "unimplemented"
	// CodeInternal: an invariant broke — dispatch uses it when the handler
	// panicked or ended its goroutine, or its reply could not be encoded or
	// is too large, and for a failure of one of the handler's own calls
	// that the handler returned (its connection failed, its Dial did not
	// succeed, its Client was closed): see ErrShutdown.
	CodeInternal Code = "internal"
	// CodeUnavailable: the service cannot serve now; dispatch uses it when
	// the server is shutting down. Safe to retry.
	CodeUnavailable Code = "unavailable"
	// CodeDataLoss: data was lost or corrupted.
	CodeDataLoss Code = "data_loss"
	// CodeUnauthenticated: the caller's identity could not be established.
	CodeUnauthenticated Code = "unauthenticated"
)

// Error is an error produced by a call: by the handler or by the server on
// its behalf. The caller receives the same Code and Message on every path;
// test for it with errors.As. A handler may return an *Error to choose the
// code; any other error arrives with CodeUnknown, or with
// CodeDeadlineExceeded or CodeCanceled when it matches the context errors.
//
// An *Error may carry structured details (WithDetail, ErrorDetailAs), which
// reach the caller on every path but the net/rpc codecs'.
type Error struct {
	Code    Code
	Message string

	details   []ErrorDetail // each value the Error's own
	detailErr error         // a detail that WithDetail could not encode
}

// Error returns the message alone, as net/rpc does.
func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, context.DeadlineExceeded) and
// errors.Is(err, context.Canceled) hold for errors of those codes, and
// errors.Is(err, target) hold for any *Error target with the same Code and
// Message — so a service can export sentinel errors that its callers test
// for on every path, though only their code, text and details cross the
// network. Details do not take part: an error with details matches its
// sentinel without them.
func (e *Error) Is(target error) bool {
	switch target {
	case context.DeadlineExceeded:
		return e.Code == CodeDeadlineExceeded
	case context.Canceled:
		return e.Code == CodeCanceled
	}
	if t, ok := target.(*Error); ok && t != nil {
		return e.Code == t.Code && e.Message == t.Message
	}
	return false
}

// ErrShutdown is returned for calls on a closed Client, and for calls in
// flight when the Client is closed or its connection fails. It is net/rpc's
// error, so existing checks keep working. When the connection failed, the
// error returned matches ErrShutdown (errors.Is) and says why: its text is
// ErrShutdown's followed by the cause, and errors.Unwrap gives the cause —
// a TLS alert, a protocol error, or, when the server went away, the
// transport's error for that (io.EOF, a reset), always worded "the server
// closed the connection" so that one failure reads the same whichever end
// of the connection noticed it first. Every call that the failure ends
// gets the same error: the first cause seen. The shortcut words the same
// failures the same: a call or stream in flight when its Server stops, or
// whose frame the Server would refuse as over its limit, gets "connection
// is shut down: the server closed the connection"; one whose reply or
// stream message the Client would refuse gets what the Client's transport
// says of that frame ("frame too large: peer announced N bytes, limit L").
// N is the frame's size on the path the call took, and can differ between
// paths by the few bytes of the call's (or stream's) sequence number, which
// the shortcut has none of (it counts one digit). Only a Client's own Close gives
// ErrShutdown itself.
//
// A Client's own failures name the call they ended: Call returns a failure
// of its connection, a failed Dial or a closed Client's ErrShutdown with
// the method and the Path before the words above ("Inventory.Reserve over
// mux: connection is shut down: the server closed the connection"),
// errors.Is and errors.As seeing through to them. A stream's are named the
// same, with the Path the stream took, by OpenStream and CallStream, the
// typed methods' Open and Call, and the stream's Send, CloseSend, Recv,
// Established and CloseAndRecv; so is the end of a stream's context, as a
// call's is (an *Error of its code, "Inventory.Watch over mux: context
// canceled"). Such an error is never
// an *Error: an *Error is what the callee answered. So a handler that
// returns the failure of a call of its own does not pass it off as its
// caller's connection dying — a failed stream of its own as much as a
// failed call: every path sends it to the caller as an *Error with
// CodeInternal and the handler's text, which names the method
// that failed, one hop away — it does not match ErrShutdown, and the
// handler may have acted before it failed. Not CodeUnavailable, which a
// caller (and a Client of replicas) retries at once: retrying the call
// that reached the handler is the caller's choice, for an idempotent
// method, and retries made at every hop would multiply.
var ErrShutdown = rpc.ErrShutdown

// callFailure is a Client's own failure (its connection's, its Dial's,
// ErrShutdown) with the call it ended: the method and the Path.
type callFailure struct {
	method string
	path   Path
	err    error
}

// named returns err, a failure of the Client's own for the call of method
// over path, as a callFailure.
func named(method string, path Path, err error) error {
	return &callFailure{method: method, path: path, err: err}
}

func (e *callFailure) Error() string { return callWords(e.method, e.path) + e.err.Error() }

// Unwrap returns the failure: ErrShutdown, a connection's failure, a
// Dial's.
func (e *callFailure) Unwrap() error { return e.err }

// callWords open the text of an error of the Client's own for a call:
// "Service.Method over path: ".
func callWords(method string, path Path) string {
	if path == "" {
		return method + ": "
	}
	return method + " over " + string(path) + ": "
}

// unnamed returns the failure a callFailure names, or err itself.
func unnamed(err error) error {
	if cf, ok := err.(*callFailure); ok {
		return cf.err
	}
	return err
}

// passedOn reports whether err, a handler's, is the failure of one of the
// handler's own calls: the caller must not take it for its own (ErrShutdown).
func passedOn(err error) bool {
	var cf *callFailure
	return errors.As(err, &cf) || errors.Is(err, ErrShutdown)
}

// connFailure is ErrShutdown with the cause of a connection's failure.
type connFailure struct {
	cause error
	text  string // what the cause says, in the error's words
}

// connFailed returns the error for calls whose connection failed with
// cause.
func connFailed(cause error) error {
	text := cause.Error()
	if hungUp(cause) {
		text = "the server closed the connection"
	}
	return &connFailure{cause: cause, text: text}
}

// hungUp reports whether err is how a transport says that the peer closed
// the connection: the end of the stream when reading, a closed pipe or a
// reset when writing. The innermost cause decides, so that a transport's
// error wrapping another cause (mux's session error wrapping a TLS alert)
// is not taken for a hang-up.
func hungUp(err error) bool {
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
		err = u
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// errServerClosed is what the shortcut's calls and streams get when the
// network's would see the Server close their connection: the Server
// stopped, or it would drop a connection that sent it a frame over its
// limit. One value serves: a connFailure is never changed.
var errServerClosed = connFailed(io.EOF)

// frameRefused is what the shortcut's calls and streams get when the
// network's Client would drop the connection because the Server sent it m,
// a frame over the Client's limit: the words of the Client's frame reader.
// m carries Seq "0": the size it gives is the network's for a call whose
// sequence number has one digit (ErrShutdown's doc says so).
func frameRefused(m *transport.Message, limit int) error {
	return connFailed(frame.Announced(uint64(frame.Size(m)), limit))
}

func (e *connFailure) Error() string { return ErrShutdown.Error() + ": " + e.text }

// Is makes the failure match ErrShutdown.
func (e *connFailure) Is(target error) bool { return target == ErrShutdown }

// Unwrap returns the cause.
func (e *connFailure) Unwrap() error { return e.cause }

// ErrNilReply is returned, on every path, when reply is nil or a nil
// pointer. It is not an *Error: no call was made.
var ErrNilReply = errors.New("dispatch: reply must be a non-nil pointer")

// toError maps whatever a call ended with to the *Error the caller
// receives. Every path goes through it, so the same failure reads the same.
// A failure of the handler's own calls becomes CodeInternal (ErrShutdown's
// doc says why).
func toError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil {
			return nil // a nil *Error in a non-nil error: success, as the handler meant
		}
		return detailsOut(e)
	}
	code := CodeUnknown
	switch {
	case passedOn(err):
		code = CodeInternal
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

// callCtxError is what Call returns for the call of method over path that
// err ended, an *Error: when ctx has ended, or its deadline has passed, and
// err says so (CodeDeadlineExceeded, CodeCanceled: the caller's own context
// or, on the network, the Server's word for the same deadline, whichever
// came first), the error of ctx's end naming the call ("Arith.Multiply
// over mux: context deadline exceeded"); otherwise err, as the callee
// answered it.
func callCtxError(ctx context.Context, method string, path Path, err *Error) *Error {
	if err.Code != CodeDeadlineExceeded && err.Code != CodeCanceled {
		return err
	}
	why := ctx.Err()
	if why == nil {
		d, ok := ctx.Deadline()
		if !ok || time.Now().Before(d) {
			return err // the handler's word, not the caller's context
		}
		why = context.DeadlineExceeded // passed, its timer not yet run
	}
	e := toError(why)
	e.Message = callWords(method, path) + e.Message
	return e
}

// admissionPrefix opens the message of every admission refusal. The wire
// has no field of its own for a refusal (WIRE.md), so a Client knows one by
// its code and this prefix: admissionRefusal and isAdmissionRefusal are the
// two ends of that contract, and nothing else spells it.
const admissionPrefix = "dispatch: too many "

// admissionRefusal is the error of a call or stream a server refuses
// before any handler runs, because its connection already has limit of
// what ("calls", WithMaxCallsPerConn; "bytes", WithMaxBytesPerConn) in
// flight. A stream that takes its connection past the byte budget ends
// with it too.
func admissionRefusal(what string, limit int64) *Error {
	return &Error{Code: CodeResourceExhausted, Message: admissionPrefix + what +
		" in flight on this connection (limit " + strconv.FormatInt(limit, 10) + ")"}
}

// isAdmissionRefusal reports whether e is a server's refusal made by
// admissionRefusal: nothing of the call ran, so a Client of replicas may
// try it on another.
func isAdmissionRefusal(e *Error) bool {
	return e.Code == CodeResourceExhausted && strings.HasPrefix(e.Message, admissionPrefix)
}
