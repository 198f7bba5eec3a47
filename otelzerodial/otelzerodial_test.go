package otelzerodial_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/otelzerodial"
	"github.com/zerodial/transport/tcp"
)

// Args and Seen are the test service's request and reply types.
type Args struct{ A, B int }

// Seen is what Arith.Look saw in its context.
type Seen struct {
	Baggage         string
	TraceID, SpanID string
	Mine            string // the caller's own metadata entry "mine"
}

var propagators = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// telemetry is an SDK TracerProvider recording every span and a
// MeterProvider read by hand.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T, sampler sdktrace.Sampler) *telemetry {
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) options() []otelzerodial.Option {
	return []otelzerodial.Option{
		otelzerodial.WithTracerProvider(tel.tp),
		otelzerodial.WithMeterProvider(tel.mp),
		otelzerodial.WithPropagators(propagators),
	}
}

// ended waits for n spans to have ended — a Server span may end after its
// Client's call returned, when the caller's context ended first — and
// returns them.
func (tel *telemetry) ended(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	for stop := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		spans := tel.spans.Ended()
		if len(spans) >= n || time.Now().After(stop) {
			if len(spans) != n {
				t.Fatalf("%d spans ended, want %d: %v", len(spans), n, names(spans))
			}
			return spans
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name()+"/"+s.SpanKind().String())
	}
	return out
}

// kind returns the one span of kind k.
func kind(t *testing.T, spans []sdktrace.ReadOnlySpan, k trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == k {
			if found != nil {
				t.Fatalf("two %s spans: %v", k, names(spans))
			}
			found = s
		}
	}
	if found == nil {
		t.Fatalf("no %s span: %v", k, names(spans))
	}
	return found
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// pathCase is one of the five paths a call can take.
type pathCase struct {
	path dispatch.Path
	// newTransport returns the transport and the address to listen on.
	newTransport func(t *testing.T) (transport.Transport, string)
	shortcut     dispatch.ShortcutMode
	ipPeer       bool // the Server sees the peer's IP address
	// http: the Server is served by httpzerodial's Handler and called
	// through httpzerodial.Dial's Client, newTransport unused.
	http bool
}

var pathCases = []pathCase{
	{path: "memory", newTransport: func(*testing.T) (transport.Transport, string) { return memory.New(), "" }},
	{path: "tcp", newTransport: tcpTransport, ipPeer: true},
	{path: "mux", newTransport: func(t *testing.T) (transport.Transport, string) {
		tr := mux.New()
		t.Cleanup(func() { tr.Close() })
		return tr, "127.0.0.1:0"
	}, ipPeer: true},
	{path: dispatch.PathShortcutCopy, newTransport: tcpTransport, shortcut: dispatch.ShortcutCopy},
	{path: dispatch.PathShortcutDirect, newTransport: tcpTransport, shortcut: dispatch.ShortcutDirect},
	{path: dispatch.PathHTTP, http: true, ipPeer: true},
}

func tcpTransport(*testing.T) (transport.Transport, string) { return tcp.New(), "127.0.0.1:0" }

// env is a Server with the test service, both instrumented, and a Client.
type env struct {
	client *dispatch.Client
	server *dispatch.Server
	addr   string // the address dialled
}

// start serves the test service on pc's path and dials it. Every method is
// registered with dispatch.Borrows, so a ShortcutDirect Client calls each
// of them directly.
func start(t *testing.T, pc pathCase, server, client []otelzerodial.Option) *env {
	t.Helper()
	srv := dispatch.NewServer(dispatch.WithInterceptors(otelzerodial.ServerInterceptor(server...)))
	borrows := dispatch.Borrows()
	err := errors.Join(
		dispatch.Handle(srv, "Arith.Multiply", func(_ context.Context, a *Args, r *int) error {
			*r = a.A * a.B
			return nil
		}, borrows),
		dispatch.Handle(srv, "Arith.Look", func(ctx context.Context, _ *Args, r *Seen) error {
			sc := trace.SpanContextFromContext(ctx)
			*r = Seen{
				Baggage: baggage.FromContext(ctx).Member("user").Value(),
				TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(),
				Mine: dispatch.MetadataFrom(ctx)["mine"],
			}
			return nil
		}, borrows),
		dispatch.Handle(srv, "Arith.Fail", func(context.Context, *Args, *int) error {
			return &dispatch.Error{Code: dispatch.CodeInternal, Message: "boom"}
		}, borrows),
		dispatch.Handle(srv, "Arith.Missing", func(context.Context, *Args, *int) error {
			return &dispatch.Error{Code: dispatch.CodeNotFound, Message: "no such key"}
		}, borrows),
		dispatch.Handle(srv, "Arith.Wait", func(ctx context.Context, _ *Args, _ *int) error {
			<-ctx.Done()
			return ctx.Err()
		}, borrows),
		dispatch.Handle(srv, "Arith.Panic", func(context.Context, *Args, *int) error {
			panic("oops")
		}, borrows),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, addr := serveAndDial(t, pc, srv, dispatch.WithInterceptors(otelzerodial.ClientInterceptor(client...)))
	return &env{client: c, server: srv, addr: addr}
}

// serveAndDial serves srv on pc's path and dials it with opts, returning
// the Client, closed when t ends, and the address dialled.
func serveAndDial(t *testing.T, pc pathCase, srv *dispatch.Server, opts ...dispatch.ClientOption) (*dispatch.Client, string) {
	t.Helper()
	var c *dispatch.Client
	var addr string
	var err error
	if pc.http {
		ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
		ts.Config.Protocols = httpzerodial.Protocols() // h2c, for streams
		ts.Start()
		t.Cleanup(ts.Close)
		addr = ts.URL
		c, err = httpzerodial.Dial(context.Background(), addr, httpzerodial.WithDispatchOptions(opts...))
	} else {
		tr, listenAddr := pc.newTransport(t)
		l, lerr := tr.Listen(listenAddr)
		if lerr != nil {
			t.Fatal(lerr)
		}
		if err := srv.Start(l); err != nil {
			l.Close()
			t.Fatal(err)
		}
		addr = l.Addr().String()
		c, err = dispatch.Dial(context.Background(), tr, addr, append(opts, dispatch.WithShortcut(pc.shortcut))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, addr
}

func forEachPath(t *testing.T, f func(t *testing.T, pc pathCase)) {
	for _, pc := range pathCases {
		t.Run(string(pc.path), func(t *testing.T) { f(t, pc) })
	}
}

// TestParentChild: on every path the Server span is the remote child of
// the Client span, itself the child of the caller's span; the handler's
// context carries the Server span, the caller's baggage and the caller's own
// metadata beside the propagated entries.
func TestParentChild(t *testing.T) {
	forEachPath(t, func(t *testing.T, pc pathCase) {
		tel := newTelemetry(t, sdktrace.AlwaysSample())
		e := start(t, pc, tel.options(), tel.options())

		member, _ := baggage.NewMember("user", "alice")
		bag, _ := baggage.New(member)
		ctx := dispatch.WithMetadata(baggage.ContextWithBaggage(context.Background(), bag), dispatch.Metadata{"mine": "kept"})
		ctx, caller := tel.tp.Tracer("test").Start(ctx, "caller")
		var seen Seen
		if err := e.client.Call(ctx, "Arith.Look", Args{}, &seen); err != nil {
			t.Fatal(err)
		}
		caller.End()

		spans := tel.ended(t, 3)
		client, server := kind(t, spans, trace.SpanKindClient), kind(t, spans, trace.SpanKindServer)
		if got, want := client.Parent().SpanID(), caller.SpanContext().SpanID(); got != want {
			t.Errorf("client span's parent %s, want the caller's span %s", got, want)
		}
		if got, want := server.Parent().SpanID(), client.SpanContext().SpanID(); got != want {
			t.Errorf("server span's parent %s, want the client span %s", got, want)
		}
		if !server.Parent().IsRemote() {
			t.Error("server span's parent is not remote")
		}
		trace := caller.SpanContext().TraceID()
		if client.SpanContext().TraceID() != trace || server.SpanContext().TraceID() != trace {
			t.Errorf("trace IDs: caller %s, client %s, server %s", trace, client.SpanContext().TraceID(), server.SpanContext().TraceID())
		}
		want := Seen{Baggage: "alice", TraceID: trace.String(), SpanID: server.SpanContext().SpanID().String(), Mine: "kept"}
		if seen != want {
			t.Errorf("the handler saw %+v, want %+v (the server span and the caller's baggage)", seen, want)
		}
	})
}

// TestAttributes checks the attributes and status of a successful call's
// spans on every path.
func TestAttributes(t *testing.T) {
	forEachPath(t, func(t *testing.T, pc pathCase) {
		tel := newTelemetry(t, sdktrace.AlwaysSample())
		e := start(t, pc, tel.options(), tel.options())
		var product int
		if err := e.client.Call(context.Background(), "Arith.Multiply", Args{6, 7}, &product); err != nil || product != 42 {
			t.Fatalf("Multiply(6, 7) = %d, %v", product, err)
		}
		spans := tel.ended(t, 2)
		client, server := kind(t, spans, trace.SpanKindClient), kind(t, spans, trace.SpanKindServer)
		for _, s := range spans {
			if s.Name() != "Arith/Multiply" {
				t.Errorf("span name %q, want Arith/Multiply", s.Name())
			}
			if s.Status().Code != codes.Unset {
				t.Errorf("%s span status %v, want unset", s.SpanKind(), s.Status())
			}
			if s.InstrumentationScope().Name != otelzerodial.ScopeName {
				t.Errorf("scope %q", s.InstrumentationScope().Name)
			}
		}

		common := map[attribute.Key]string{
			"rpc.system.name":          "zerodial",
			"rpc.method":               "Arith/Multiply",
			"zerodial.path":            string(pc.path),
			"rpc.response.status_code": "OK",
		}
		ca, sa := attrs(client), attrs(server)
		for k, v := range common {
			if got := ca[k].String(); got != v {
				t.Errorf("client %s = %q, want %q", k, got, v)
			}
			if got := sa[k].String(); got != v {
				t.Errorf("server %s = %q, want %q", k, got, v)
			}
		}
		for _, k := range []attribute.Key{"error.type", "rpc.method_original", "rpc.system", "rpc.service"} {
			if _, ok := ca[k]; ok {
				t.Errorf("client span has %s", k)
			}
			if _, ok := sa[k]; ok {
				t.Errorf("server span has %s", k)
			}
		}

		// The client: server.address and server.port from the address dialled.
		host, port := e.addr, "" // a memory address, "mem:1": no port
		if pc.http {
			u, err := url.Parse(e.addr) // the base URL
			if err != nil {
				t.Fatal(err)
			}
			host, port = u.Hostname(), u.Port()
		} else if pc.path != "memory" {
			var err error
			if host, port, err = net.SplitHostPort(e.addr); err != nil {
				t.Fatal(err)
			}
		}
		if got := ca["server.address"].AsString(); got != host {
			t.Errorf("client server.address = %q, want %q", got, host)
		}
		if got, ok := ca["server.port"]; port == "" && ok || port != "" && strconv.FormatInt(got.AsInt64(), 10) != port {
			t.Errorf("client server.port = %v, want %q", got.String(), port)
		}
		for _, k := range []attribute.Key{"network.peer.address", "network.peer.port"} {
			if _, ok := ca[k]; ok {
				t.Errorf("client span has %s", k)
			}
		}

		// The server: the peer's IP address where there is one.
		if pc.ipPeer {
			if got := sa["network.peer.address"].AsString(); got != "127.0.0.1" {
				t.Errorf("server network.peer.address = %q, want 127.0.0.1", got)
			}
			if got := sa["network.peer.port"].AsInt64(); got <= 0 || got > 65535 {
				t.Errorf("server network.peer.port = %d", got)
			}
		} else {
			for _, k := range []attribute.Key{"network.peer.address", "network.peer.port"} {
				if _, ok := sa[k]; ok {
					t.Errorf("server span has %s = %s on %s", k, sa[k].String(), pc.path)
				}
			}
		}
		for _, k := range []attribute.Key{"server.address", "server.port"} {
			if _, ok := sa[k]; ok {
				t.Errorf("server span has %s", k)
			}
		}
	})
}

// spanWant is what one span of a failed call should say.
type spanWant struct {
	status  string     // rpc.response.status_code, "" for none
	errType string     // error.type, "" for none
	code    codes.Code // the span's status
	message string     // its description
}

func checkSpan(t *testing.T, s sdktrace.ReadOnlySpan, w spanWant) {
	t.Helper()
	a := attrs(s)
	if got := a["rpc.response.status_code"].AsString(); got != w.status {
		t.Errorf("%s span rpc.response.status_code = %q, want %q", s.SpanKind(), got, w.status)
	}
	if got := a["error.type"].AsString(); got != w.errType {
		t.Errorf("%s span error.type = %q, want %q", s.SpanKind(), got, w.errType)
	}
	if got := s.Status(); got.Code != w.code || got.Description != w.message {
		t.Errorf("%s span status %v %q, want %v %q", s.SpanKind(), got.Code, got.Description, w.code, w.message)
	}
}

// TestStatus checks the spans of calls that fail, on every path: the Client
// counts every error a failure, the Server only those the gRPC conventions
// count.
func TestStatus(t *testing.T) {
	forEachPath(t, func(t *testing.T, pc pathCase) {
		cases := []struct {
			name, method   string
			timeout        time.Duration
			wantErr        dispatch.Code
			client, server spanWant
		}{
			{
				name: "handler error", method: "Arith.Fail", wantErr: dispatch.CodeInternal,
				client: spanWant{"INTERNAL", "INTERNAL", codes.Error, "boom"},
				server: spanWant{"INTERNAL", "INTERNAL", codes.Error, "boom"},
			},
			{
				name: "handler not found", method: "Arith.Missing", wantErr: dispatch.CodeNotFound,
				client: spanWant{"NOT_FOUND", "NOT_FOUND", codes.Error, "no such key"},
				server: spanWant{"NOT_FOUND", "", codes.Unset, ""},
			},
			{
				// A second, as the call must reach the Server, and start its
				// span, before the deadline passes: within 20 ms, as it was,
				// a loaded machine need not, and one span ended, not two.
				name: "deadline", method: "Arith.Wait", timeout: time.Second, wantErr: dispatch.CodeDeadlineExceeded,
				// The caller's own deadline names the call and its path.
				client: spanWant{"DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", codes.Error, "Arith.Wait over PATH: context deadline exceeded"},
				server: spanWant{"DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", codes.Error, "context deadline exceeded"},
			},
			{
				name: "panic", method: "Arith.Panic", wantErr: dispatch.CodeInternal,
				client: spanWant{"INTERNAL", "INTERNAL", codes.Error, "dispatch: panic in Arith.Panic: oops"},
				server: spanWant{"INTERNAL", "INTERNAL", codes.Error, "the handler of Arith.Panic panicked or ended its goroutine"},
			},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				tel := newTelemetry(t, sdktrace.AlwaysSample())
				e := start(t, pc, tel.options(), tel.options())
				ctx := context.Background()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				err := e.client.Call(ctx, tc.method, Args{}, new(int))
				var de *dispatch.Error
				if !errors.As(err, &de) || de.Code != tc.wantErr {
					t.Fatalf("%s: error %v, want code %q", tc.method, err, tc.wantErr)
				}
				spans := tel.ended(t, 2)
				tc.client.message = strings.ReplaceAll(tc.client.message, "PATH", string(pc.path))
				checkSpan(t, kind(t, spans, trace.SpanKindClient), tc.client)
				checkSpan(t, kind(t, spans, trace.SpanKindServer), tc.server)
			})
		}

		// A method the Server does not have: no Server span; the Client's
		// names no method of the caller's choosing.
		t.Run("unknown method", func(t *testing.T) {
			tel := newTelemetry(t, sdktrace.AlwaysSample())
			e := start(t, pc, tel.options(), tel.options())
			err := e.client.Call(context.Background(), "Arith.Nope", Args{}, new(int))
			var de *dispatch.Error
			if !errors.As(err, &de) || de.Code != dispatch.CodeNotFound {
				t.Fatalf("Arith.Nope: error %v, want not_found", err)
			}
			spans := tel.ended(t, 1)
			client := kind(t, spans, trace.SpanKindClient)
			checkSpan(t, client, spanWant{"NOT_FOUND", "NOT_FOUND", codes.Error, "rpc: can't find method Arith.Nope"})
			a := attrs(client)
			if client.Name() != "zerodial" || a["rpc.method"].AsString() != "_OTHER" || a["rpc.method_original"].AsString() != "Arith.Nope" {
				t.Errorf("span %q, rpc.method %q, rpc.method_original %q; want zerodial, _OTHER, Arith.Nope",
					client.Name(), a["rpc.method"].AsString(), a["rpc.method_original"].AsString())
			}
			point := onePoint(t, tel, "rpc.client.call.duration")
			if v, _ := point.Attributes.Value("rpc.method"); v.AsString() != "_OTHER" {
				t.Errorf("metric rpc.method = %q, want _OTHER", v.AsString())
			}
		})
	})
}

// TestClientErrors checks the Client span of calls that fail before any
// status comes back.
func TestClientErrors(t *testing.T) {
	tel := newTelemetry(t, sdktrace.AlwaysSample())
	e := start(t, pathCases[0], tel.options(), tel.options())
	if err := e.client.Call(context.Background(), "Arith.Multiply", Args{}, nil); !errors.Is(err, dispatch.ErrNilReply) {
		t.Fatalf("nil reply: %v", err)
	}
	e.client.Close()
	if err := e.client.Call(context.Background(), "Arith.Multiply", Args{}, new(int)); !errors.Is(err, dispatch.ErrShutdown) {
		t.Fatalf("closed client: %v", err)
	}
	spans := tel.ended(t, 2)
	checkSpan(t, spans[0], spanWant{"", "nil_reply", codes.Error, dispatch.ErrNilReply.Error()})
	checkSpan(t, spans[1], spanWant{"", "shutdown", codes.Error, "Arith.Multiply over " + string(pathCases[0].path) + ": " + dispatch.ErrShutdown.Error()})
}

// histogram returns the data of the float64 histogram name.
func histogram(t *testing.T, tel *telemetry, name string) metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				if sm.Scope.Name != otelzerodial.ScopeName {
					t.Errorf("%s: scope %q", name, sm.Scope.Name)
				}
				return m
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

// onePoint returns the one data point of the histogram name.
func onePoint(t *testing.T, tel *telemetry, name string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m := histogram(t, tel, name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok || len(h.DataPoints) != 1 {
		t.Fatalf("%s: %T with %d points, want one float64 histogram point", name, m.Data, len(h.DataPoints))
	}
	return h.DataPoints[0]
}

// TestMetrics checks both duration histograms on every path: their names,
// units and attributes, and that each measurement is its span's duration.
func TestMetrics(t *testing.T) {
	forEachPath(t, func(t *testing.T, pc pathCase) {
		tel := newTelemetry(t, sdktrace.AlwaysSample())
		e := start(t, pc, tel.options(), tel.options())
		if err := e.client.Call(context.Background(), "Arith.Multiply", Args{6, 7}, new(int)); err != nil {
			t.Fatal(err)
		}
		_ = e.client.Call(context.Background(), "Arith.Fail", Args{}, new(int))
		spans := tel.ended(t, 4)

		for _, side := range []struct {
			metric string
			kind   trace.SpanKind
			extra  []attribute.Key
		}{
			{"rpc.server.call.duration", trace.SpanKindServer, nil},
			{"rpc.client.call.duration", trace.SpanKindClient, []attribute.Key{"server.address"}},
		} {
			m := histogram(t, tel, side.metric)
			if m.Unit != "s" {
				t.Errorf("%s unit %q, want s", side.metric, m.Unit)
			}
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				t.Fatalf("%s is a %T", side.metric, m.Data)
			}
			if len(h.DataPoints) != 2 {
				t.Fatalf("%s: %d points, want 2 (success, failure)", side.metric, len(h.DataPoints))
			}
			for _, p := range h.DataPoints {
				status, _ := p.Attributes.Value("rpc.response.status_code")
				method := "Arith/Multiply"
				if status.AsString() != "OK" {
					method = "Arith/Fail"
				}
				want := map[attribute.Key]string{
					"rpc.system.name": "zerodial",
					"rpc.method":      method,
					"zerodial.path":   string(pc.path),
				}
				if method == "Arith/Fail" {
					want["rpc.response.status_code"], want["error.type"] = "INTERNAL", "INTERNAL"
				} else if p.Attributes.HasValue("error.type") {
					t.Errorf("%s: a successful call has error.type", side.metric)
				}
				for k, v := range want {
					if got, _ := p.Attributes.Value(k); got.String() != v {
						t.Errorf("%s %s = %q, want %q", side.metric, k, got.String(), v)
					}
				}
				for _, k := range side.extra {
					if !p.Attributes.HasValue(k) {
						t.Errorf("%s has no %s", side.metric, k)
					}
				}
				if p.Count != 1 {
					t.Errorf("%s %s: count %d, want 1", side.metric, method, p.Count)
				}
				// The measurement is the span's duration, to the nanosecond.
				for _, s := range spans {
					if s.SpanKind() == side.kind && s.Name() == method {
						if d := s.EndTime().Sub(s.StartTime()).Seconds(); p.Sum != d {
							t.Errorf("%s %s: %v s, span %v s", side.metric, method, p.Sum, d)
						}
					}
				}
			}
		}
	})
}

// TestNotSampled: a caller's decision not to sample reaches the Server, so
// neither end records a span, and the durations are measured all the same.
func TestNotSampled(t *testing.T) {
	forEachPath(t, func(t *testing.T, pc pathCase) {
		tel := newTelemetry(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
		e := start(t, pc, tel.options(), tel.options())
		caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
		ctx := trace.ContextWithSpanContext(context.Background(), caller) // valid, not sampled
		var seen Seen
		if err := e.client.Call(ctx, "Arith.Look", Args{}, &seen); err != nil {
			t.Fatal(err)
		}
		if seen.TraceID != caller.TraceID().String() {
			t.Errorf("the handler's trace %s, want the caller's %s", seen.TraceID, caller.TraceID())
		}
		if spans := tel.spans.Ended(); len(spans) != 0 {
			t.Errorf("%d spans recorded: %v", len(spans), names(spans))
		}
		onePoint(t, tel, "rpc.server.call.duration")
		onePoint(t, tel, "rpc.client.call.duration")
	})
}

// TestGlobals: with no options, the interceptors use otel's global
// providers and propagator.
func TestGlobals(t *testing.T) {
	tel := newTelemetry(t, sdktrace.AlwaysSample())
	otel.SetTracerProvider(tel.tp)
	otel.SetMeterProvider(tel.mp)
	otel.SetTextMapPropagator(propagators)
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
	})
	e := start(t, pathCases[0], nil, nil)
	if err := e.client.Call(context.Background(), "Arith.Multiply", Args{6, 7}, new(int)); err != nil {
		t.Fatal(err)
	}
	spans := tel.ended(t, 2)
	client, server := kind(t, spans, trace.SpanKindClient), kind(t, spans, trace.SpanKindServer)
	if server.Parent().SpanID() != client.SpanContext().SpanID() {
		t.Error("the server span is not the client span's child")
	}
	onePoint(t, tel, "rpc.client.call.duration")
}

// TestMetadataCarrier checks the carrier against the W3C propagators.
func TestMetadataCarrier(t *testing.T) {
	tel := newTelemetry(t, sdktrace.AlwaysSample())
	ctx, span := tel.tp.Tracer("test").Start(context.Background(), "caller")
	defer span.End()
	md := dispatch.Metadata{"mine": "kept"}
	propagators.Inject(ctx, otelzerodial.MetadataCarrier(md))
	if md["traceparent"] == "" || md["mine"] != "kept" || len(otelzerodial.MetadataCarrier(md).Keys()) != 2 {
		t.Fatalf("metadata after Inject: %v", md)
	}
	got := trace.SpanContextFromContext(propagators.Extract(context.Background(), otelzerodial.MetadataCarrier(md)))
	if got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() || !got.IsRemote() {
		t.Errorf("extracted %v, want %v", got, span.SpanContext())
	}
}
