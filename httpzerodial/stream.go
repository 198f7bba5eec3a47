package httpzerodial

import (
	"context"
	"errors"
	"io"
	"net/http"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/dispatch"
)

// bidi serves a stream of name over HTTP/2: any number of messages each
// way.
func (h *Handler) bidi(name string) func(context.Context, *connect.BidiStream[message, message]) error {
	return func(ctx context.Context, st *connect.BidiStream[message, message]) error {
		end := &streamEnd{codec: codecOf(st.RequestHeader().Get("Content-Type")), receive: st.Receive, send: st.Send, header: st.ResponseHeader()}
		md, err := h.srv.InvokeStream(ctx, incomingCall(ctx, name, st.RequestHeader()), end)
		setMetadata(st.ResponseTrailer(), st.ResponseTrailer(), md, end.sentInHeader)
		return connectError(err, nil)
	}
}

// serverStream serves a stream of name over HTTP/1.1: the caller's one
// message, and any number back.
func (h *Handler) serverStream(name string) func(context.Context, *connect.Request[message], *connect.ServerStream[message]) error {
	return func(ctx context.Context, req *connect.Request[message], st *connect.ServerStream[message]) error {
		first := req.Msg
		receive := func() (*message, error) {
			if first == nil {
				return nil, io.EOF
			}
			m := first
			first = nil
			return m, nil
		}
		end := &streamEnd{codec: req.Msg.codec, receive: receive, send: st.Send, header: st.ResponseHeader()}
		md, err := h.srv.InvokeStream(ctx, incomingCall(ctx, name, req.Header()), end)
		setMetadata(st.ResponseTrailer(), st.ResponseTrailer(), md, end.sentInHeader)
		return connectError(err, nil)
	}
}

// streamEnd is a connect-go stream as the Server's end of it
// (dispatch.IncomingStream): each message decoded into the method's types
// and encoded from them in the stream's codec; the handler's readiness is
// the response headers, which connect-go sends with the first message, or
// alone when the handler says it is ready first (Ready). The reply
// metadata the handler set by then goes in those headers
// (dispatch.StreamHeaderSender), but for its trailer's entries (replyKey);
// the rest goes in the trailers.
type streamEnd struct {
	codec   string
	receive func() (*message, error)
	send    func(*message) error
	header  http.Header       // the response's headers, until they are sent
	sent    dispatch.Metadata // the reply metadata sent in them
}

var _ dispatch.StreamHeaderSender = (*streamEnd)(nil)

func (s *streamEnd) Receive(v any) error {
	m, err := s.receive()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return dispatchError(err)
	}
	return decode(s.codec, m.data, v, false) // a stream's messages are not strict (dispatch.WithStrictDecoding)
}

// SendHeader puts the reply metadata set before the handler was ready in
// the response headers, its trailer's entries left for the end.
func (s *streamEnd) SendHeader(md dispatch.Metadata) {
	for k := range md {
		if _, trailer, _ := replyKey(k); trailer {
			delete(md, k)
		}
	}
	setMetadata(s.header, nil, md, nil)
	s.sent = md
}

// sentInHeader reports whether the reply metadata entry k: v went in the
// response headers already.
func (s *streamEnd) sentInHeader(k, v string) bool {
	sent, ok := s.sent[k]
	return ok && sent == v
}

// Ready sends the response headers, with no message (connect-go's Send of
// nil), so that the caller learns the handler is ready: a client's
// ResponseHeader returns. A failure shows in the next Send.
func (s *streamEnd) Ready() { _ = s.send(nil) }

func (s *streamEnd) Send(v any) error {
	body, err := encode(s.codec, v)
	if err != nil {
		return err
	}
	return s.send(&message{data: body})
}
