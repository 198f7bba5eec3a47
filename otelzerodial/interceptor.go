package otelzerodial

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zerodial/transport/dispatch"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/rpcconv"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans and metrics this
// package makes.
const ScopeName = "github.com/zerodial/transport/otelzerodial"

// PathKey is the attribute that says which way a call went, on spans and
// metrics: the dispatch.Path ("memory", "tcp", "mux", "shortcut-copy",
// "shortcut-direct", "netrpc").
const PathKey = attribute.Key("zerodial.path")

// systemName is rpc.system.name: see the package documentation for why.
const systemName = "zerodial"

var systemAttr = semconv.RPCSystemNameKey.String(systemName)

// ServerInterceptor returns a dispatch.Interceptor for a Server
// (dispatch.NewServer(dispatch.WithInterceptors(...))): each call it
// serves gets a Server span, the child of the caller's span when the
// caller's metadata carries one, and an rpc.server.call.duration
// measurement. The handler's context carries the span, and the caller's
// baggage. See the package documentation for the attributes and statuses.
func ServerInterceptor(opts ...Option) dispatch.Interceptor {
	ins := newInstruments(opts, rpcconv.NewServerCallDuration)
	return func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		ctx, span, start, key := ins.startServer(ctx, method)
		returned := false
		defer func() {
			if !returned { // a panic, or runtime.Goexit: dispatch answers INTERNAL
				ins.finish(ctx, span, start, key, outcome{
					status: "INTERNAL", errType: "INTERNAL",
					message: "the handler of " + method + " panicked or ended its goroutine",
				})
			}
		}()
		err := next(ctx, args, reply)
		returned = true
		ins.finish(ctx, span, start, key, serverOutcome(err))
		return err
	}
}

// startServer starts the Server span of a call or stream of method, the
// child of the caller's span when the metadata in ctx carries one, and
// returns the context carrying it, the span, when it began and its
// measurement's key.
func (ins *instruments) startServer(ctx context.Context, method string) (context.Context, trace.Span, time.Time, setKey) {
	info, _ := dispatch.CallInfoFrom(ctx)
	ctx = ins.prop.Extract(ctx, incomingCarrier{ctx})
	name := ins.name(method)
	var buf [5]attribute.KeyValue
	attrs := append(buf[:0], systemAttr, name.attr, PathKey.String(string(info.Path)))
	attrs = appendPeer(attrs, info.RemoteAddr)
	start := time.Now()
	ctx, span := ins.tracer.Start(ctx, name.span, serverKind, trace.WithAttributes(attrs...))
	return ctx, span, start, setKey{method: name.span, path: string(info.Path)}
}

// startClient starts the Client span of a call or stream of method, the
// child of the span in ctx, and returns the context carrying it, with the
// trace context and baggage added to its metadata, the span, when it began,
// its measurement's key and the CallInfo it was made from.
func (ins *instruments) startClient(ctx context.Context, method string) (context.Context, trace.Span, time.Time, setKey, dispatch.CallInfo) {
	info, _ := dispatch.CallInfoFrom(ctx)
	name := ins.name(method)
	host, port := serverOf(info.RemoteAddr)
	var buf [5]attribute.KeyValue
	attrs := append(buf[:0], systemAttr, name.attr, PathKey.String(string(info.Path)))
	if host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
		if port != 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	start := time.Now()
	ctx, span := ins.tracer.Start(ctx, name.span, clientKind, trace.WithAttributes(attrs...))
	ctx = ins.inject(ctx)
	return ctx, span, start, setKey{method: name.span, path: string(info.Path), server: host, port: port}, info
}

// ClientInterceptor returns a dispatch.Interceptor for a Client
// (dispatch.Dial(ctx, tr, addr, dispatch.WithInterceptors(...))): each
// call it makes gets a Client span, the child of the span in the call's
// context, whose context and the context's baggage travel to the Server in
// the call's metadata, and an rpc.client.call.duration measurement. See the
// package documentation for the attributes and statuses.
func ClientInterceptor(opts ...Option) dispatch.Interceptor {
	ins := newInstruments(opts, rpcconv.NewClientCallDuration)
	return func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		ctx, span, start, key, info := ins.startClient(ctx, method)
		end := func(o outcome) {
			var more [3]attribute.KeyValue
			extra := more[:0]
			// The Client corrects the path if the call went another way.
			if now, ok := dispatch.CallInfoFrom(ctx); ok && now.Path != info.Path {
				key.path = string(now.Path)
				extra = append(extra, PathKey.String(key.path))
			}
			if o.other {
				// A method the Server does not have: as the conventions ask,
				// no name of the caller's choosing in the span's name or in
				// the metric.
				key.method = otherMethod
				extra = append(extra, semconv.RPCMethod(otherMethod), semconv.RPCMethodOriginal(method))
				span.SetName(systemName)
			}
			ins.finish(ctx, span, start, key, o, extra...)
		}
		returned := false
		defer func() {
			if !returned { // a panic, or runtime.Goexit, in an inner interceptor
				end(outcome{errType: "panic", message: "the call of " + method + " panicked or ended its goroutine"})
			}
		}()
		err := next(ctx, args, reply)
		returned = true
		end(clientOutcome(err))
		return err
	}
}

// otherMethod is rpc.method for a method the Server does not have.
const otherMethod = "_OTHER"

// The span kinds, as options made once.
var (
	serverKind = trace.WithSpanKind(trace.SpanKindServer)
	clientKind = trace.WithSpanKind(trace.SpanKindClient)
)

// instruments is what one interceptor records with.
type instruments struct {
	tracer trace.Tracer
	hist   metric.Float64Histogram
	prop   propagation.TextMapPropagator
	names  cache[string, methodName]
	sets   cache[setKey, metric.RecordOption] // the attributes of measurements
}

// conventionHistogram is rpcconv's ServerCallDuration and ClientCallDuration.
type conventionHistogram interface {
	Inst() metric.Float64Histogram
}

func newInstruments[H conventionHistogram](opts []Option, newHist func(metric.Meter, ...metric.Float64HistogramOption) (H, error)) *instruments {
	c := newConfig(opts)
	h, err := newHist(c.meterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL)))
	if err != nil {
		otel.Handle(err)
	}
	return &instruments{
		tracer: c.tracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		hist:   h.Inst(),
		prop:   c.propagators,
	}
}

// methodName is a method's span name and rpc.method.
type methodName struct {
	span string             // "Service/Method"
	attr attribute.KeyValue // rpc.method
}

func (ins *instruments) name(method string) methodName {
	return ins.names.get(method, func(method string) methodName {
		s := spanName(method)
		return methodName{span: s, attr: semconv.RPCMethod(s)}
	})
}

// setKey is what a measurement's attributes are made of.
type setKey struct {
	method, path, status, errType string
	server                        string // server.address, Client only
	port                          int    // server.port, Client only; 0 for none
}

func newSet(k setKey) metric.RecordOption {
	var buf [7]attribute.KeyValue
	attrs := append(buf[:0], systemAttr, semconv.RPCMethod(k.method), PathKey.String(k.path))
	if k.status != "" {
		attrs = append(attrs, semconv.RPCResponseStatusCode(k.status))
	}
	if k.errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(k.errType))
	}
	if k.server != "" {
		attrs = append(attrs, semconv.ServerAddress(k.server))
	}
	if k.port != 0 {
		attrs = append(attrs, semconv.ServerPort(k.port))
	}
	return metric.WithAttributeSet(attribute.NewSet(attrs...))
}

// carriers holds the maps a Client injects into before dispatch.WithMetadata
// copies them.
var carriers = sync.Pool{New: func() any { return make(dispatch.Metadata, 4) }}

// inject returns ctx with the propagators' fields of its span and baggage
// added to the metadata of its calls.
func (ins *instruments) inject(ctx context.Context) context.Context {
	md := carriers.Get().(dispatch.Metadata)
	ins.prop.Inject(ctx, MetadataCarrier(md))
	if len(md) > 0 {
		ctx = dispatch.WithMetadata(ctx, md) // copies md
		clear(md)
	}
	carriers.Put(md)
	return ctx
}

// spanTimes is what the SDK's spans (sdktrace.ReadOnlySpan) say of their
// times.
type spanTimes interface {
	StartTime() time.Time
	EndTime() time.Time
}

// finish sets the span's closing attributes — more, the status code,
// error.type — and its status, ends it, and records its duration: the
// span's own, when the span says what it is, so that the two agree as the
// conventions ask; otherwise the time since start.
func (ins *instruments) finish(ctx context.Context, span trace.Span, start time.Time, key setKey, o outcome, more ...attribute.KeyValue) {
	d := time.Since(start)
	if span.IsRecording() {
		var buf [5]attribute.KeyValue
		attrs := append(buf[:0], more...)
		if o.status != "" {
			attrs = append(attrs, semconv.RPCResponseStatusCode(o.status))
		}
		if o.failed() {
			attrs = append(attrs, semconv.ErrorTypeKey.String(o.errType))
			span.SetStatus(codes.Error, o.message)
		}
		span.SetAttributes(attrs...)
		span.End()
		if st, ok := span.(spanTimes); ok {
			if end := st.EndTime(); !end.IsZero() {
				d = end.Sub(st.StartTime())
			}
		}
	}
	if !ins.hist.Enabled(ctx) {
		return
	}
	key.status, key.errType = o.status, o.errType
	ins.hist.Record(ctx, d.Seconds(), ins.sets.get(key, newSet))
}

// spanName is a method's span name and rpc.method: "Service/Method" for
// dispatch's "Service.Method".
func spanName(method string) string {
	dot := strings.LastIndexByte(method, '.')
	if dot < 0 {
		return method
	}
	return method[:dot] + "/" + method[dot+1:]
}

// appendPeer appends network.peer.address and network.peer.port when a is
// an IP address with a port.
func appendPeer(attrs []attribute.KeyValue, a net.Addr) []attribute.KeyValue {
	switch a := a.(type) {
	case nil:
		return attrs
	case *net.TCPAddr:
		if a == nil || a.IP == nil {
			return attrs
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return append(attrs, semconv.NetworkPeerAddress(ip.Unmap().String()), semconv.NetworkPeerPort(a.Port))
	}
	s := a.String()
	if s == "" || !(s[0] == '[' || ('0' <= s[0] && s[0] <= '9')) {
		return attrs // not an IP address: save parsing it
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return attrs
	}
	return append(attrs, semconv.NetworkPeerAddress(ap.Addr().Unmap().String()), semconv.NetworkPeerPort(int(ap.Port())))
}

// serverOf returns server.address and server.port (0 for none) of the
// address a Client dialled: host and port of a network address, the whole
// of a memory transport's ("mem:3" names a listener; it has no port), and
// host and port of a base URL (httpzerodial's Client), the port its
// scheme's when the URL names none.
func serverOf(a net.Addr) (string, int) {
	if a == nil {
		return "", 0
	}
	s := a.String()
	if a.Network() == "memory" || strings.IndexByte(s, ':') < 0 {
		return s, 0
	}
	if strings.Contains(s, "://") {
		return urlServer(s)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return s, 0
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return host, 0
	}
	return host, p
}

// urlServer returns server.address and server.port of a base URL.
func urlServer(s string) (string, int) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s, 0
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p <= 0 || p > 65535 {
		p = map[string]int{"http": 80, "https": 443}[u.Scheme]
	}
	return u.Hostname(), p
}
