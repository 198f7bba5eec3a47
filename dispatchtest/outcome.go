package dispatchtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// Outcome is everything a caller and a service can observe of one case.
// Run demands of a path the reference path's Outcome, or the one its
// declared differences make of it.
type Outcome struct {
	// Reply is the reply, or the messages a stream received, as text.
	Reply string
	// Err is the text of the error the caller got, with the path its own
	// failures name ("Arith.Sleep over tcp: ...") as "<path>".
	Err string
	// ErrType is the error's Go type.
	ErrType string
	// Code is the error's Code, when it is a *dispatch.Error.
	Code dispatch.Code
	// IsDeadline and IsCanceled say whether the error matches
	// context.DeadlineExceeded and context.Canceled.
	IsDeadline, IsCanceled bool
	// Interceptor is what the Server's interceptors saw, in order.
	Interceptor []string
	// Handler is what a stream's handler said of its end, when the case
	// asks.
	Handler string
	// Extra is whatever else the case observes.
	Extra string
}

// observe is the outcome of a call of e's Server that left reply and err.
func observe(e *env, reply any, err error) Outcome {
	o := Outcome{Reply: "<nil>", Interceptor: e.svc.rec.take()}
	if v := reflect.ValueOf(reply); v.Kind() == reflect.Pointer && !v.IsNil() {
		o.Reply = fmt.Sprintf("%+v", v.Elem())
	}
	observeErr(&o, err)
	return o
}

// observeErr records err in o.
func observeErr(o *Outcome, err error) {
	if err == nil {
		return
	}
	o.Err = pathless(err.Error())
	o.ErrType = fmt.Sprintf("%T", err)
	var de *dispatch.Error
	if errors.As(err, &de) {
		o.Code = de.Code
	}
	o.IsDeadline = errors.Is(err, context.DeadlineExceeded)
	o.IsCanceled = errors.Is(err, context.Canceled)
}

// overPath matches the words that open a Client's own failure, and the
// end of its context, for a call: "Service.Method over path: ".
var overPath = regexp.MustCompile(`^(\S+) over ([a-z0-9-]+): `)

// pathless returns s with the path its opening words name as "<path>".
func pathless(s string) string { return overPath.ReplaceAllString(s, "$1 over <path>: ") }

// failure words an error for comparison across paths: its text, and
// whether it is a frame-limit error or a connection failure.
func failure(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%v (frame too large: %v, shut down: %v)", pathless(err.Error()), errors.Is(err, transport.ErrFrameTooLarge), errors.Is(err, dispatch.ErrShutdown))
}

// codeOf returns err's dispatch Code, or "<not *dispatch.Error>".
func codeOf(err error) dispatch.Code {
	var de *dispatch.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return "<not *dispatch.Error>"
}
