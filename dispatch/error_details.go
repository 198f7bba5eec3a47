package dispatch

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/rpcwire"
)

// MaxErrorDetailsSize bounds the details of one *Error: the length of their
// encoding on the wire (WIRE.md, the Error-Details header), about the sum
// of their types' and values' lengths. An error whose details are larger
// reaches the caller, on every path, as a CodeInternal *Error that says so
// (and carries the handler's message) rather than losing them unsaid.
const MaxErrorDetailsSize = 64 << 10

// ErrorDetail is one structured detail of an *Error, as gRPC status details
// and Connect error details are: the name of its type, and its value
// encoded with msgpack. It crosses every path but the net/rpc codecs, whose
// errors are text alone (doc.go), and reaches an HTTP caller as a Connect or
// gRPC error detail (httpzerodial). Type is what a caller matches on:
// NewErrorDetail names a value by its Go type ("pkg.Type"); a detail made
// as a literal may name it otherwise (for a caller in another language).
type ErrorDetail struct {
	Type  string
	Value []byte
}

// NewErrorDetail encodes v with msgpack as a detail named by v's Go type
// (ErrorDetailType). Its Value is its own: it shares no memory with v.
func NewErrorDetail(v any) (ErrorDetail, error) {
	b, err := codec.Msgpack.Marshal(v)
	if err != nil {
		return ErrorDetail{}, fmt.Errorf("dispatch: encoding error detail %s: %w", typeName(reflect.TypeOf(v)), err)
	}
	// A []byte is its own encoding, returned as is: copy it, so that the
	// detail never aliases what the handler goes on to change.
	return ErrorDetail{Type: typeName(reflect.TypeOf(v)), Value: bytes.Clone(b)}, nil
}

// Decode decodes d's value into v, a pointer, as a reply is decoded.
func (d ErrorDetail) Decode(v any) error {
	if err := codec.Msgpack.Unmarshal(d.Value, v); err != nil {
		return fmt.Errorf("dispatch: decoding error detail %s: %w", d.Type, err)
	}
	return nil
}

// ErrorDetailType is the name NewErrorDetail gives a value of type T and
// ErrorDetailAs looks for: its Go type as reflect spells it, pointers
// taken away ("pkg.Type" for a pkg.Type or a *pkg.Type).
func ErrorDetailType[T any]() string { return typeName(reflect.TypeFor[T]()) }

func typeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.String()
}

// WithDetail returns a copy of e with v encoded as one more detail
// (NewErrorDetail), so that a sentinel *Error can be given details without
// changing it. A v that cannot be encoded turns the error its caller gets
// into a CodeInternal one that says so, on every path.
func (e *Error) WithDetail(v any) *Error {
	d, err := NewErrorDetail(v)
	c := e.withCopiedDetails()
	if err != nil {
		c.detailErr = err
		return c
	}
	c.details = append(c.details, d)
	return c
}

// WithDetails returns a copy of e with ds added to its details, each value
// copied.
func (e *Error) WithDetails(ds ...ErrorDetail) *Error {
	c := e.withCopiedDetails()
	c.details = append(c.details, cloneDetails(ds)...)
	return c
}

func (e *Error) withCopiedDetails() *Error {
	if e == nil {
		return &Error{} // a nil *Error given details: CodeUnknown, no message
	}
	return &Error{Code: e.Code, Message: e.Message, details: cloneDetails(e.details), detailErr: e.detailErr}
}

// Details returns e's details in the order they were added, copies the
// caller may keep and change; none for a nil e.
func (e *Error) Details() []ErrorDetail {
	if e == nil {
		return nil
	}
	return cloneDetails(e.details)
}

// ErrorDetailAs decodes into a T the first detail of err's *Error (found
// with errors.As) named ErrorDetailType[T], and reports whether there was
// one that decoded.
func ErrorDetailAs[T any](err error) (T, bool) {
	var v T
	var e *Error
	if !errors.As(err, &e) || e == nil {
		return v, false
	}
	name := ErrorDetailType[T]()
	for _, d := range e.details {
		if d.Type == name {
			if d.Decode(&v) != nil {
				return *new(T), false
			}
			return v, true
		}
	}
	return v, false
}

func cloneDetails(ds []ErrorDetail) []ErrorDetail {
	if len(ds) == 0 {
		return nil
	}
	c := make([]ErrorDetail, len(ds))
	for i, d := range ds {
		c[i] = ErrorDetail{Type: d.Type, Value: bytes.Clone(d.Value)}
	}
	return c
}

// wireDetails is ds as rpcwire carries them.
func wireDetails(ds []ErrorDetail) []rpcwire.Detail {
	w := make([]rpcwire.Detail, len(ds))
	for i, d := range ds {
		w[i] = rpcwire.Detail(d)
	}
	return w
}

// detailsOut is the *Error a caller gets for e, whose details are checked
// as every path checks them: details that could not be encoded or are over
// MaxErrorDetailsSize make a CodeInternal error in the same words
// everywhere; otherwise a copy of e, its details copied, so that no caller
// shares memory with what the handler made.
func detailsOut(e *Error) *Error {
	if e.detailErr != nil {
		return &Error{Code: CodeInternal, Message: e.detailErr.Error() + " (the error was: " + e.Message + ")"}
	}
	if n := rpcwire.DetailsLen(wireDetails(e.details)); n > MaxErrorDetailsSize {
		return detailsTooLarge(n, e.Message)
	}
	return &Error{Code: e.Code, Message: e.Message, details: cloneDetails(e.details)}
}

// detailsTooLarge is the error of an error whose details take n bytes,
// over MaxErrorDetailsSize; msg is that error's message.
func detailsTooLarge(n int, msg string) *Error {
	return &Error{Code: CodeInternal, Message: "dispatch: error details are too large: " + strconv.Itoa(n) +
		" bytes, limit " + strconv.Itoa(MaxErrorDetailsSize) + " (the error was: " + msg + ")"}
}

// wireError is the *Error a response or a stream's end carries in h, whose
// Error header is msg: its code, and its details if Error-Details holds
// well-formed ones within the bound. Details that are not make a
// CodeInternal error that says so.
func wireError(h map[string]string, msg string) *Error {
	e := &Error{Code: Code(h[rpcwire.ErrorCode]), Message: msg}
	s, ok := h[rpcwire.ErrorDetails]
	if !ok {
		return e
	}
	if len(s) > MaxErrorDetailsSize {
		return detailsTooLarge(len(s), msg)
	}
	ws, err := rpcwire.ParseDetails(s)
	if err != nil {
		return &Error{Code: CodeInternal, Message: "dispatch: " + err.Error() + " (the error was: " + msg + ")"}
	}
	e.details = make([]ErrorDetail, len(ws))
	for i, w := range ws {
		e.details[i] = ErrorDetail(w)
	}
	return e
}

// setDetails adds e's details, if any, to a response's or a stream end's
// headers h.
func setDetails(h map[string]string, e *Error) {
	if len(e.details) > 0 {
		h[rpcwire.ErrorDetails] = detailsHeader(e)
	}
}

// detailsHeader is the Error-Details header of e, which has details.
func detailsHeader(e *Error) string {
	return string(rpcwire.AppendDetails(nil, wireDetails(e.details)))
}
