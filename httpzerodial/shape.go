package httpzerodial

import (
	"errors"
	"net/http"
	"strings"
)

// connectShape tells, from a request's Content-Type, whether a Connect
// protocol request is a unary call ("application/json") or a stream
// ("application/connect+json"); ok is false for gRPC and gRPC-Web, whose
// requests do not say.
func connectShape(contentType string) (unary, ok bool) {
	ct, _, _ := strings.Cut(contentType, ";")
	ct = strings.ToLower(strings.TrimSpace(ct))
	sub, found := strings.CutPrefix(ct, "application/")
	switch {
	case !found || strings.HasPrefix(sub, "grpc"):
		return false, false
	case strings.HasPrefix(sub, "connect+"):
		return false, true
	}
	return true, true
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
func (refusedStream) Ready()            {}
