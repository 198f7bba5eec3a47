package dispatchtest

import (
	"context"
	"reflect"
	"testing"

	"github.com/zerodial/transport/dispatch"
)

// Binding says how to serve a *dispatch.Server on one path and how to call
// it there. Run builds the Server each case needs (its services, its
// interceptors, its options) and hands it to Serve.
type Binding struct {
	// Profile names the path and declares what it cannot carry: the
	// differences its outcomes show from the reference path's.
	Profile Profile
	// Serve serves srv on the path and returns a Caller of it. The frames
	// each end reads are limited as limits says (0: the path's default).
	// Everything Serve starts ends with the case, through t.Cleanup; Run
	// closes srv itself.
	Serve func(t *testing.T, srv *dispatch.Server, limits Limits) Caller
	// OtherProtocol, when not nil, dials with this path's client a
	// listener of srv that speaks another protocol than the path's, and
	// returns the dial's error (the case "a listener of another protocol"
	// wants one matching transport.ErrProtocol). A path with one protocol
	// or no preface declares so (OneProtocol, NoPreface).
	OtherProtocol func(t *testing.T, srv *dispatch.Server) error
	// MaxFrame is the largest frame either end reads by default: the
	// transport's limit, the codec's. 0 is transport.DefaultMaxFrameSize.
	MaxFrame int
	// Bubble says that the path can run inside a testing/synctest bubble:
	// no real socket, nothing that blocks outside the bubble. Run then
	// runs the cases that wait on time in a bubble of their own, Serve
	// included, where every duration is exact and no case sleeps for
	// real.
	Bubble bool
}

// Name is the path's name, its Profile's.
func (b Binding) Name() string { return b.Profile.Name }

// Limits are the frame limits of the two ends of a path a case asks for.
// Zero is the path's default (Binding.MaxFrame).
type Limits struct {
	// Server is the largest frame the serving end reads.
	Server int
	// Client is the largest frame the calling end reads.
	Client int
}

// Caller makes calls and opens streams on one path, as a case asks. A path
// reached by a *dispatch.Client gets one from ClientCaller; another
// (connect-go's client over HTTP, say) implements it over its own client.
//
// A Caller reports the Server's failures as a *dispatch.Error with the
// Code and the Message the Server sent, and its own failures (a lost
// connection, the end of ctx) as its client does.
type Caller interface {
	// Call makes one unary call, bounded by ctx: its deadline reaches the
	// handler, its values do not.
	Call(ctx context.Context, c Call) error
	// OpenStream opens a stream of any shape. It returns once the stream
	// is open (a refusal by the Server may be reported by OpenStream, or
	// by the stream's first Recv, as dispatch.OpenStream does).
	OpenStream(ctx context.Context, s StreamCall) (ClientStream, error)
	// CallStream makes a server-streaming call: it sends args, closes its
	// side and calls each with every message the handler sends, in
	// order, until the stream ends (nil), fails (its error), or each
	// returns false (nil: the caller has left, as a broken range over
	// dispatch.CallStream does, and the handler's context ends). The
	// message handed to each is valid until each returns.
	CallStream(ctx context.Context, s StreamCall, args any, each func(m any) bool) error
}

// Call is one unary call a case makes.
type Call struct {
	// Method is "Service.Method".
	Method string
	// Args is what the caller sends: a value or a pointer, nil included
	// (cases of the nil rule).
	Args any
	// Reply is where the reply goes: a pointer, or nil or a typed nil
	// (the case "nil reply" wants dispatch.ErrNilReply, and no call).
	Reply any
	// Metadata is the request metadata (dispatch.WithMetadata); nil for
	// none.
	Metadata dispatch.Metadata
	// ReplyMetadata, when not nil, receives the reply metadata
	// (dispatch.CaptureReplyMetadata): replaced when the reply carries
	// metadata, left alone otherwise.
	ReplyMetadata *dispatch.Metadata
}

// StreamCall is one stream a case opens.
type StreamCall struct {
	// Method is "Service.Method".
	Method string
	// In and Out are the types of the messages the caller sends and
	// receives (dispatch.OpenStream's type parameters).
	In, Out reflect.Type
	// Metadata is the request metadata; nil for none.
	Metadata dispatch.Metadata
	// ReplyMetadata, when not nil, receives the reply metadata the
	// stream's end carries; left alone when the caller leaves first.
	ReplyMetadata *dispatch.Metadata
}

// ClientStream is the caller's end of a stream, as dispatch.Stream is,
// with messages as pointers of the StreamCall's types.
type ClientStream interface {
	// Send sends m, a pointer to an In.
	Send(m any) error
	// CloseSend says the caller sends no more.
	CloseSend() error
	// Recv receives the next message into m, a pointer to an Out. It
	// returns io.EOF when the stream has ended cleanly, else the stream's
	// failure.
	Recv(m any) error
	// Close ends the stream from the caller's side: the handler's context
	// ends, and Send and Recv fail with dispatch.ErrStreamDone.
	Close() error
}
