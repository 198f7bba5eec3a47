package httpzerodial

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

// ClientOption configures a Client made by Dial.
type ClientOption func(*clientOptions)

type clientOptions struct {
	hc       *http.Client
	tls      *tls.Config
	protocol connect.ClientOption // nil: Connect
	grpc     bool                 // gRPC, which needs HTTP/2 for every call
	codec    codec.Codec
	connect  []connect.ClientOption
	dispatch []dispatch.ClientOption
}

// WithHTTPClient makes the Client send its requests with hc, every call
// and stream alike: its TLS, proxies, timeouts and protocols are the
// Client's. A stream needs HTTP/2 to carry messages both ways (see Dial):
// an hc that speaks only HTTP/1.1 — without h2c to an "http://" address,
// with Protocols that leave HTTP/2 out to an "https://" one — carries one
// message from the caller, then the handler's, and refuses the other
// shapes.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(o *clientOptions) { o.hc = hc }
}

// WithTLS is the TLS configuration of the Client's own HTTP clients, for
// an "https://" address (and the scheme of an address without one, as a
// resolver's are). It has no effect with WithHTTPClient.
func WithTLS(cfg *tls.Config) ClientOption {
	return func(o *clientOptions) { o.tls = cfg }
}

// WithGRPC makes the Client speak gRPC (over HTTP/2, h2c or TLS) rather
// than the Connect protocol.
func WithGRPC() ClientOption {
	return func(o *clientOptions) { o.protocol, o.grpc = connect.WithGRPC(), true }
}

// WithGRPCWeb makes the Client speak gRPC-Web rather than the Connect
// protocol.
func WithGRPCWeb() ClientOption {
	return func(o *clientOptions) { o.protocol, o.grpc = connect.WithGRPCWeb(), false }
}

// WithJSON makes the Client send and take JSON (encoding/json) rather
// than msgpack, the codec of zerodial's wire.
func WithJSON() ClientOption {
	return func(o *clientOptions) { o.codec = JSON }
}

// WithClientConnectOptions passes options to connect-go's clients: its
// interceptors, compression (connect.WithSendGzip), read and send limits,
// and so on. The codec and the protocol are this package's to choose
// (WithJSON, WithGRPC, WithGRPCWeb).
func WithClientConnectOptions(opts ...connect.ClientOption) ClientOption {
	return func(o *clientOptions) { o.connect = append(o.connect, opts...) }
}

// WithDispatchOptions passes options to the dispatch.Client Dial makes:
// its interceptors, logger, and replicas (dispatch.WithResolver and the
// options of replicas).
func WithDispatchOptions(opts ...dispatch.ClientOption) ClientOption {
	return func(o *clientOptions) { o.dispatch = append(o.dispatch, opts...) }
}

// Dial returns a dispatch.Client whose calls and streams go over HTTP to
// target, with connect-go's client underneath, to a server of this
// package's Handler (or any server of the same methods over Connect, gRPC
// or gRPC-Web): the calls a program makes over any other path —
// Client.Call, typed descriptors (Method.Call), OpenStream and CallStream —
// are made over it unchanged. target is a base URL ("http://host:port", or
// "https://host:port/prefix" for a Handler under a prefix), to which each
// method's "/Service/Method" is added; with dispatch.WithResolver (through
// WithDispatchOptions) it is the resolver's target, and each address it
// names (host:port) is the base URL of one replica, "http://" or, with
// WithTLS, "https://". Replicas are balanced, ejected and retried by the
// rules of every other path.
//
// The Connect protocol is spoken by default (WithGRPC, WithGRPCWeb), in
// msgpack (WithJSON). Unary calls of the Connect protocol and of gRPC-Web
// go over HTTP/1.1, or HTTP/2 where TLS negotiates it; streams, which carry
// messages both ways at once, and gRPC need HTTP/2: h2c to an "http://"
// address (with prior knowledge), negotiated over TLS. A stream over an
// HTTP/1.1 response (WithHTTPClient with an HTTP/1.1 client, a proxy that
// speaks only HTTP/1.1) is refused with connect-go's words and
// dispatch.CodeUnimplemented.
//
// What carries over: the Client's interceptors; CallInfo, whose Path is
// dispatch.PathHTTP and whose RemoteAddr is the base URL; metadata
// (dispatch.WithMetadata) as request headers, and reply metadata
// (dispatch.CaptureReplyMetadata) from the response's headers and
// trailers, read back into the keys the Handler wrote them from: a
// header's further values as "key#1", "key#2", ..., and a unary reply's
// trailers as "key#t", "key#t1", ... (a stream's trailers are its end's
// plain keys), so that grpczerodial's headers and trailers cross as they
// do on every path; the caller's deadline (Connect-Timeout-Ms, grpc-timeout); the
// end of the caller's context, which ends the request; codes and details
// of errors (DispatchCode, DetailTypeURLPrefix); compression
// (WithClientConnectOptions). What cannot is refused with an error naming
// the option: dispatch.WithShortcut (an HTTP server is reached through
// HTTP), and dispatch.WithCodec (WithJSON chooses).
//
// Dial makes no request: an address nobody serves fails the first call,
// with the dial's error (which a Client of replicas retries on another).
// Close ends the calls and streams in flight (dispatch.ErrShutdown) and
// closes the connections of the Client's own HTTP clients (each base URL
// has its own); a program's http.Client (WithHTTPClient) is the
// program's to close.
func Dial(ctx context.Context, target string, opts ...ClientOption) (*dispatch.Client, error) {
	o := clientOptions{codec: codec.Msgpack}
	for _, opt := range opts {
		opt(&o)
	}
	return dispatch.DialProtocol(ctx, &httpProtocol{o: o}, target, o.dispatch...)
}

// httpProtocol is the dispatch.Protocol of Dial's Clients.
type httpProtocol struct {
	o clientOptions
}

func (p *httpProtocol) String() string      { return "http" }
func (p *httpProtocol) Path() dispatch.Path { return dispatch.PathHTTP }
func (p *httpProtocol) Codec() codec.Codec  { return p.o.codec }

// Connect checks addr and returns the connection of its base URL: HTTP
// opens its own connections, request by request.
func (p *httpProtocol) Connect(_ context.Context, addr string) (dispatch.ProtocolConn, error) {
	base := addr
	if !strings.Contains(addr, "://") {
		scheme := "http://"
		if p.o.tls != nil {
			scheme = "https://"
		}
		base = scheme + addr
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpzerodial: %q is not a base URL (http://host:port or https://host:port)", addr)
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &httpConn{p: p, base: strings.TrimSuffix(base, "/"), ctx: ctx, stop: stop}
	c.unaryHC, c.streamHC = p.o.hc, p.o.hc
	c.streamH1 = p.o.hc != nil && speaksHTTP1(p.o.hc, u.Scheme)
	if p.o.hc == nil {
		c.dialer = &connDialer{done: ctx}
		c.h1 = &http.Transport{TLSClientConfig: p.o.tls, ForceAttemptHTTP2: true, DialContext: c.dialer.dial}
		prot := new(http.Protocols)
		prot.SetUnencryptedHTTP2(true)
		prot.SetHTTP2(true)
		c.h2c = &http.Transport{TLSClientConfig: p.o.tls, Protocols: prot, DialContext: c.dialer.dial}
		c.unaryHC, c.streamHC = &http.Client{Transport: c.h1}, &http.Client{Transport: c.h1}
		if u.Scheme == "http" {
			c.streamHC = &http.Client{Transport: c.h2c}
			if p.o.grpc {
				c.unaryHC = c.streamHC
			}
		}
	}
	return c, nil
}

// httpConn is a Client's connection to one base URL: connect-go's clients
// of its methods, made on a method's first call.
type httpConn struct {
	p                 *httpProtocol
	base              string
	unaryHC, streamHC *http.Client
	// streamH1 says that streamHC speaks HTTP/1.1 to the base URL: its
	// streams go one way (httpStream.oneWay).
	streamH1 bool
	// ctx ends with the connection (Close), ending the calls and streams
	// in flight.
	ctx  context.Context
	stop context.CancelFunc
	// h1 and h2c are the connection's own transports when the Client was
	// not given an http.Client: HTTP/1.1 (HTTP/2 when TLS negotiates it),
	// and HTTP/2 with prior knowledge over plain TCP. Their connections
	// are dialer's, which Close closes.
	h1, h2c *http.Transport
	dialer  *connDialer

	unary, streams sync.Map // method name → *connect.Client[outgoing, incoming]
}

// client returns connect-go's client of the method name, over hc.
func (c *httpConn) client(m *sync.Map, name string, hc *http.Client) *connect.Client[outgoing, incoming] {
	if cl, ok := m.Load(name); ok {
		return cl.(*connect.Client[outgoing, incoming])
	}
	path := "/" + name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		path = "/" + name[:i] + "/" + name[i+1:]
	}
	// The reply is bounded as zerodial's wire bounds a frame, unless the
	// caller's options say otherwise.
	opts := append([]connect.ClientOption{connect.WithReadMaxBytes(transport.DefaultMaxFrameSize)}, c.p.o.connect...)
	if c.p.o.protocol != nil {
		opts = append(opts, c.p.o.protocol)
	}
	opts = append(opts, connect.WithCodec(sendCodec{c.p.o.codec})) // last: the codec the calls use
	cl, _ := m.LoadOrStore(name, connect.NewClient[outgoing, incoming](reachClient{hc}, c.base+path, opts...))
	return cl.(*connect.Client[outgoing, incoming])
}

// Call makes a unary call (dispatch.ProtocolConn). The arguments are
// encoded here, on the caller's goroutine, so that nothing reads them once
// the call has returned.
//
// A call with a deadline sends it (Connect-Timeout-Ms, grpc-timeout)
// rounded up, not down as connect-go does, and its request is not ended by
// the deadline's passing: the server's handler ends at the deadline as it
// does on every path (context.DeadlineExceeded, not the Canceled of a
// request that went away), and answers so. The caller returns at its
// deadline meanwhile, and the request goes on without it until the
// server's answer, or a second after the deadline.
func (c *httpConn) Call(ctx context.Context, name string, md dispatch.Metadata, args any) ([]byte, dispatch.Metadata, error) {
	cl := c.client(&c.unary, name, c.unaryHC)
	body, err := encodeArgs(c.p.o.codec, args)
	if err != nil {
		return nil, nil, &dispatch.Error{Code: dispatch.CodeInternal, Message: "httpzerodial: encoding the arguments of " + name + ": " + err.Error()}
	}
	req := connect.NewRequest(&outgoing{raw: body, encoded: true})
	if len(md) > 0 { // req.Header() makes a map
		if err := requestMetadata(req.Header(), md); err != nil {
			return nil, nil, err
		}
	}
	d, ok := ctx.Deadline()
	if !ok && c.dialer != nil {
		// Close ends the call by closing its connection (connDialer).
		return c.answer(cl.CallUnary(ctx, req))
	}
	if !ok {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(c.ctx, cancel)
		defer stop()
		return c.answer(cl.CallUnary(ctx, req))
	}
	c.setTimeout(req.Header(), time.Until(d))
	rctx, end := c.detach(ctx, d)
	done := make(chan unaryResult, 1)
	go func() {
		res, err := cl.CallUnary(rctx, req)
		end()
		done <- unaryResult{res, err}
	}()
	select {
	case r := <-done:
		return c.answer(r.res, r.err)
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// detach returns the context of a request made for a caller whose
// context ctx has the deadline d, and the function that ends the request.
// The deadline's passing does not end the request: a request ended under
// the handler (an HTTP/2 reset, an HTTP/1.1 connection closed) says no
// why, and the handler's context would end canceled whenever that came
// before the server's own deadline, which counts from the request's
// arrival. The server's deadline ends the handler, which answers so; the
// request ends with the caller's cancellation, the connection's Close, or
// a second after the deadline, when no answer came.
func (c *httpConn) detach(ctx context.Context, d time.Time) (context.Context, func()) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopCaller := context.AfterFunc(ctx, func() {
		if ctx.Err() != context.DeadlineExceeded {
			cancel() // the caller cancelled: so does the request
		}
	})
	stopConn := context.AfterFunc(c.ctx, cancel)
	late := time.AfterFunc(time.Until(d)+time.Second, func() {
		stopCaller()
		stopConn()
		cancel()
	})
	return rctx, func() {
		late.Stop()
		stopCaller()
		stopConn()
		cancel()
	}
}

// encodeArgs returns v encoded by cdc, in bytes of their own (connect-go
// pools what it sends).
func encodeArgs(cdc codec.Codec, v any) ([]byte, error) {
	if a, ok := cdc.(codec.Appender); ok {
		return a.AppendMarshal(nil, v)
	}
	return cdc.Marshal(v)
}

// unaryResult is what connect-go's CallUnary returned.
type unaryResult struct {
	res *connect.Response[incoming]
	err error
}

// answer returns the outcome of a unary call as dispatch.ProtocolConn's
// Call does.
func (c *httpConn) answer(res *connect.Response[incoming], err error) ([]byte, dispatch.Metadata, error) {
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, nil, dispatch.ErrShutdown
		}
		return nil, errorMetadata(err), fromConnect(err)
	}
	return res.Msg.data, replyMetadata(res.Header(), res.Trailer(), true), nil
}

// setTimeout sets the timeout header of the protocol to timeout, rounded
// up to its unit.
func (c *httpConn) setTimeout(h http.Header, timeout time.Duration) {
	if timeout <= 0 {
		timeout = 1
	}
	if c.p.o.protocol == nil { // Connect
		h.Set("Connect-Timeout-Ms", strconv.FormatInt(int64((timeout+time.Millisecond-1)/time.Millisecond), 10))
		return
	}
	// gRPC's: at most 8 digits, in the smallest unit that holds it.
	units := []struct {
		size time.Duration
		unit string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"}}
	for _, u := range units {
		if n := (timeout + u.size - 1) / u.size; n < 1e8 || u.unit == "H" {
			h.Set("Grpc-Timeout", strconv.FormatInt(int64(n), 10)+u.unit)
			return
		}
	}
}

// Err reports the connection closed.
func (c *httpConn) Err() error {
	if c.ctx.Err() != nil {
		return dispatch.ErrShutdown
	}
	return nil
}

// Close ends the calls and streams in flight and closes the connections
// of the connection's own transports: those the calls use, which ends the
// calls that have no context of their own (Call), and the idle ones.
func (c *httpConn) Close() {
	c.stop()
	if c.dialer != nil {
		c.dialer.close()
		c.h1.CloseIdleConnections()
		c.h2c.CloseIdleConnections()
	}
}

// responseHeaders are the headers of a response that HTTP and its
// servers add, never a handler's reply metadata.
var responseHeaders = map[string]bool{"date": true, "server": true, "vary": true, "alt-svc": true, "via": true}

// replyMetadata returns the reply metadata of a response's headers and
// trailers, the inverse of the Handler's setMetadata: each header that is
// neither the protocol's nor HTTP's, its name in lower case, its first
// value under the name and each further one under "name#1", "name#2",
// ...; nil when there is none. trailerKeys says where the trailers go:
// under "name#t", "name#t1", ... (a unary reply's, whose trailers hold only
// a handler's trailer entries, as grpczerodial carries gRPC's), or as
// headers (a stream's end, whose trailers hold all the reply metadata the
// handler set once it was ready). Most responses carry none, so a header
// is known for the protocol's or HTTP's without a copy of its name in
// lower case.
func replyMetadata(h, trailer http.Header, trailerKeys bool) dispatch.Metadata {
	var md dispatch.Metadata
	for i, hh := range [2]http.Header{h, trailer} {
		suffix := "#"
		if i == 1 && trailerKeys {
			suffix = "#t"
		}
		for k, vs := range hh {
			if notMetadata(k) {
				continue
			}
			name := strings.ToLower(k)
			if reserved(name) || responseHeaders[name] {
				continue
			}
			if md == nil {
				md = make(dispatch.Metadata)
			}
			for j, v := range vs {
				key := name
				switch {
				case j == 0 && suffix == "#t":
					key = name + suffix
				case j > 0:
					key = name + suffix + strconv.Itoa(j)
				}
				md[key] = metadataValue(name, v)
			}
		}
	}
	return md
}

// canonicalNotMetadata are the headers that are never metadata, in the
// canonical form of net/http's (http.CanonicalHeaderKey).
var canonicalNotMetadata = func() map[string]bool {
	m := make(map[string]bool)
	for k := range protocolHeaders {
		m[http.CanonicalHeaderKey(k)] = true
	}
	for k := range responseHeaders {
		m[http.CanonicalHeaderKey(k)] = true
	}
	return m
}()

// notMetadata reports, without allocating, whether a header name in
// net/http's canonical form is sure to be no metadata.
func notMetadata(k string) bool {
	if canonicalNotMetadata[k] {
		return true
	}
	for _, p := range [...]string{"Connect-", "Grpc-", "Trailer-"} {
		if len(k) >= len(p) && k[:len(p)] == p {
			return true
		}
	}
	return false
}

// errorMetadata returns the reply metadata an error of connect-go
// carries (a wire error's headers and trailers).
func errorMetadata(err error) dispatch.Metadata {
	var ce *connect.Error
	if !errors.As(err, &ce) || !connect.IsWireError(err) {
		return nil
	}
	return replyMetadata(ce.Meta(), nil, false)
}
