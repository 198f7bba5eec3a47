package httpzerodial

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
)

// Option configures a Handler.
type Option func(*options)

type options struct {
	readMax  int
	connect  []connect.HandlerOption
	inflated *atomic.Int64 // counts the bytes gzip requests inflate to, for tests
}

// WithReadMaxBytes bounds the size of one message a client sends (the
// request of a unary call, each message of a stream), after
// decompression; a larger one is refused with resource_exhausted, as soon
// as its Content-Length or envelope says it is larger, or otherwise once n
// bytes and one more are read (or inflated). The default is
// transport.DefaultMaxFrameSize, the limit of zerodial's wire; n <= 0
// keeps it.
func WithReadMaxBytes(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.readMax = n
		}
	}
}

// WithConnectOptions passes options to connect-go's handlers: its
// interceptors, compression, send limit (connect.WithSendMaxBytes), and so
// on. Codecs are this package's to choose, and are not changed by them.
// A compression named "gzip" given here (connect.WithCompression) takes
// the place of the Handler's own, which stops inflating a request past the
// read limit.
func WithConnectOptions(opts ...connect.HandlerOption) Option {
	return func(o *options) { o.connect = append(o.connect, opts...) }
}

// Handler serves a dispatch.Server's methods over HTTP (see the package
// doc). It is safe for concurrent use.
type Handler struct {
	srv     *dispatch.Server
	readMax int64 // WithReadMaxBytes
	opts    []connect.HandlerOption
	errors  *connect.ErrorWriter
	methods sync.Map // name → *route, made on a method's first request
}

// route is a method's connect-go handlers. A Server's methods are never
// unregistered, so one made stays right.
type route struct {
	unary  *connect.Handler // a unary method
	bidi   *connect.Handler // a streaming method, over HTTP/2
	server *connect.Handler // a streaming method, over HTTP/1.1
}

// NewHandler returns a Handler serving srv's methods — those registered
// now and those registered later — at "/Service/Method". Mount it at the
// root of an http.Server, or under a prefix with http.StripPrefix; serve
// HTTP/2 without TLS too (Protocols) for gRPC and for streams in both
// directions.
func NewHandler(srv *dispatch.Server, opts ...Option) *Handler {
	o := options{readMax: transport.DefaultMaxFrameSize}
	for _, opt := range opts {
		opt(&o)
	}
	// The Handler's gzip before the caller's options, so that a gzip of
	// theirs, or none (connect.WithCompression("gzip", nil, nil)), wins.
	copts := []connect.HandlerOption{gzipCompression(o.readMax, o.inflated)}
	copts = append(copts, o.connect...)
	// After the caller's, so that they win over any codec given there.
	copts = append(copts,
		connect.WithReadMaxBytes(o.readMax),
		connect.WithCodec(passCodec{codecJSON}),
		connect.WithCodec(passCodec{codecJSONCharset}),
		connect.WithCodec(passCodec{codecMsgpack}),
		connect.WithCodec(noProto{}),
		// After the caller's gates, to see the deadline as they leave it.
		connect.WithRequestGate(deadlineGate),
	)
	return &Handler{srv: srv, readMax: int64(o.readMax), opts: copts, errors: connect.NewErrorWriter(copts...)}
}

// Protocols returns the protocols a plain-TCP http.Server should speak
// for a Handler: HTTP/1.1 and unencrypted HTTP/2 (h2c, with prior
// knowledge), which gRPC needs and which carries streams both ways. Over
// TLS, Go's http.Server speaks HTTP/2 by default.
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// ServeHTTP serves one call or stream.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := methodName(r.URL.Path)
	if !ok {
		h.errors.Write(w, r, connect.NewError(connect.CodeNotFound, fmt.Errorf("httpzerodial: %q is not a method's path, /Service/Method", r.URL.Path)))
		return
	}
	ct := r.Header.Get("Content-Type")
	k, codec := kindOf(ct)
	rt := h.route(name)
	if rt == nil {
		code := connect.CodeNotFound
		if k == kindGRPC && codec == codecProto {
			// A gRPC client's (in Protobuf): unimplemented, as a gRPC
			// server answers, and as grpczerodial's ClientConn reports
			// the router's words on every other path.
			code = connect.CodeUnimplemented
		}
		h.errors.Write(w, r, connect.NewError(code, errors.New(h.notFound(name))))
		return
	}
	ctx := withPeer(r)
	var body *requestBody
	if r.Body != nil && r.Body != http.NoBody {
		// An empty body is NoBody: nothing to bound, and HTTP/1.1's server
		// reads the connection already, which a read deadline would cut.
		body = &requestBody{body: r.Body, w: w, readMax: h.readMax, enveloped: k == kindStream || k == kindGRPC}
		ctx = context.WithValue(ctx, bodyKey{}, body)
	}
	r = r.WithContext(ctx)
	if body != nil {
		r.Body = body
	}
	if r.Method == http.MethodPost && servedCodec(codec) {
		if unary := k == kindUnary; (unary || k == kindStream) && unary != (rt.unary != nil) {
			// A Connect call of the other shape: refused with the code
			// of dispatch's shape rule, as on every path, where connect-go
			// would answer only that the content type is not the
			// method's.
			h.errors.Write(w, r, connectError(h.shapeRefusal(r, name, unary, codec), nil))
			return
		}
		if k == kindUnary && r.ContentLength > h.readMax {
			// The body is the message: refused unread.
			h.errors.Write(w, r, contentLengthError(r.ContentLength, h.readMax))
			return
		}
	}
	if r.Method != http.MethodPost || !fastTypes[ct] {
		w = &refusalWriter{ResponseWriter: w, r: r, name: name, stream: rt.unary == nil}
	}
	switch {
	case rt.unary != nil:
		rt.unary.ServeHTTP(w, r)
	case r.ProtoMajor >= 2:
		rt.bidi.ServeHTTP(w, r)
	default:
		rt.server.ServeHTTP(w, r)
	}
}

// methodName returns the method a path names: "/Service/Method" is
// "Service.Method".
func methodName(path string) (string, bool) {
	p, ok := strings.CutPrefix(path, "/")
	if !ok {
		return "", false
	}
	service, method, ok := strings.Cut(p, "/")
	if !ok || service == "" || method == "" || strings.Contains(method, "/") || strings.Contains(method, ".") {
		return "", false
	}
	return service + "." + method, true
}

// notFound words a missing method as the Server's router does.
func (h *Handler) notFound(name string) string {
	service := name[:strings.LastIndex(name, ".")]
	for _, m := range h.srv.Methods() {
		if strings.HasPrefix(m, service+".") && !strings.Contains(m[len(service)+1:], ".") {
			return "rpc: can't find method " + name
		}
	}
	return "rpc: can't find service " + name
}

// route returns the handlers of the method name, nil when the Server has
// no such method.
func (h *Handler) route(name string) *route {
	if rt, ok := h.methods.Load(name); ok {
		return rt.(*route)
	}
	info, ok := h.srv.Method(name)
	if !ok {
		return nil
	}
	dot := strings.LastIndex(name, ".")
	procedure := "/" + name[:dot] + "/" + name[dot+1:]
	rt := new(route)
	opts := h.opts
	if RawBodies(info) {
		opts = append(slices.Clip(opts), connect.WithCodec(rawProto{}))
	}
	if info.Stream {
		rt.bidi = connect.NewBidiStreamHandler(procedure, h.bidi(name), opts...)
		rt.server = connect.NewServerStreamHandler(procedure, h.serverStream(name), opts...)
	} else {
		rt.unary = connect.NewUnaryHandler(procedure, h.unary(name), opts...)
	}
	actual, _ := h.methods.LoadOrStore(name, rt)
	return actual.(*route)
}

// unary serves a unary call of name.
func (h *Handler) unary(name string) func(context.Context, *connect.Request[message]) (*connect.Response[message], error) {
	return func(ctx context.Context, req *connect.Request[message]) (*connect.Response[message], error) {
		in := req.Msg
		cdc := in.codec
		if cdc == "" {
			// An empty body, which connect-go hands over undecoded: the
			// codec the Content-Type names, for the reply.
			cdc = codecOf(req.Header().Get("Content-Type"))
		}
		reply, md, err := h.srv.Invoke(ctx, incomingCall(ctx, name, req.Header()), func(args any) error {
			return decode(cdc, in.data, args, h.srv.StrictDecoding())
		})
		if err != nil {
			return nil, connectError(err, md)
		}
		body, err := encode(cdc, reply)
		if err != nil {
			return nil, connectError(&dispatch.Error{Code: dispatch.CodeInternal, Message: "dispatch: encoding reply of " + name + ": " + err.Error()}, md)
		}
		res := connect.NewResponse(&message{data: body})
		setMetadata(res.Header(), res.Trailer(), md, nil)
		return res, nil
	}
}
