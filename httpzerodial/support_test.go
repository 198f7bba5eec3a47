package httpzerodial_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// Pair is the arguments of the test service's methods.
type Pair struct {
	A int `json:"a" msgpack:"a"`
	B int `json:"b" msgpack:"b"`
}

// seen is what a handler saw of its call.
type seen struct {
	info        dispatch.CallInfo
	md          dispatch.Metadata
	deadline    time.Time
	hasDeadline bool
}

// calc is the test service, with what its handlers saw.
type calc struct {
	mu      sync.Mutex
	last    seen
	ended   chan error    // Slow's and Hold's context's end, or nil when released
	started chan struct{} // Hold has started
	release chan struct{} // ends Hold
}

func (c *calc) record(ctx context.Context) {
	s := seen{md: dispatch.MetadataFrom(ctx)}
	s.info, _ = dispatch.CallInfoFrom(ctx)
	s.deadline, s.hasDeadline = ctx.Deadline()
	c.mu.Lock()
	c.last = s
	c.mu.Unlock()
}

func (c *calc) seen() seen {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// newCalc registers the test service on srv.
func newCalc(t testing.TB, srv *dispatch.Server) *calc {
	c := &calc{ended: make(chan error, 4), started: make(chan struct{}, 4), release: make(chan struct{})}
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *Pair, r *int) error {
		c.record(ctx)
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"answered-by": "calc"}); err != nil {
			return err
		}
		*r = a.A + a.B
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Calc.Fail", func(ctx context.Context, a *Pair, r *int) error {
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"why": "odd"}); err != nil {
			return err
		}
		return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "the sum is odd"}
	}))
	require.NoError(t, dispatch.Handle(srv, "Calc.Panic", func(ctx context.Context, a *Pair, r *int) error {
		panic("boom")
	}))
	require.NoError(t, dispatch.Handle(srv, "Calc.Slow", func(ctx context.Context, a *Pair, r *int) error {
		c.record(ctx)
		<-ctx.Done()
		c.ended <- ctx.Err()
		return ctx.Err()
	}))
	require.NoError(t, dispatch.Handle(srv, "Calc.Hold", func(ctx context.Context, a *Pair, r *int) error {
		c.started <- struct{}{}
		select {
		case <-ctx.Done():
			c.ended <- ctx.Err()
			return ctx.Err()
		case <-c.release:
			c.ended <- nil
			*r = 42
			return nil
		}
	}))
	// Count streams 1..A back: the server-streaming shape.
	require.NoError(t, dispatch.HandleStream(srv, "Calc.Count", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		c.record(ctx)
		for p, err := range s.Recv() {
			if err != nil {
				return err
			}
			if p.A < 0 {
				return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "cannot count to a negative"}
			}
			for i := 1; i <= p.A; i++ {
				if err := s.Send(&i); err != nil {
					return err
				}
			}
		}
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"counted": "yes"})
	}))
	// Echo answers each message at once: the bidi shape.
	require.NoError(t, dispatch.HandleStream(srv, "Calc.Echo", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		for p, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(new(p.A + p.B)); err != nil {
				return err
			}
		}
		return nil
	}))
	// Total answers once its caller has sent all: the client-streaming
	// shape.
	require.NoError(t, dispatch.HandleStream(srv, "Calc.Total", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		total := 0
		for p, err := range s.Recv() {
			if err != nil {
				return err
			}
			total += p.A + p.B
		}
		return s.Send(&total)
	}))
	return c
}

// serve serves srv's methods on a loopback HTTP server speaking HTTP/1.1
// and h2c, closed (and srv with it) when the test ends.
func serve(t testing.TB, srv *dispatch.Server, opts ...httpzerodial.Option) *httptest.Server {
	ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv, opts...))
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts
}

// protocol is one way a connect-go client reaches the Handler.
type protocol struct {
	name   string
	h2     bool // HTTP/2 without TLS (h2c); HTTP/1.1 otherwise
	option connect.ClientOption
}

var protocols = []protocol{
	{"connect/http1", false, nil},
	{"connect/h2c", true, nil},
	{"grpc/h2c", true, connect.WithGRPC()},
	{"grpcweb/http1", false, connect.WithGRPCWeb()},
	{"grpcweb/h2c", true, connect.WithGRPCWeb()},
}

// httpClient returns an HTTP client speaking HTTP/1.1, or h2c with prior
// knowledge; its idle connections close when the test ends.
func httpClient(t testing.TB, h2 bool) *http.Client {
	tr := &http.Transport{}
	if h2 {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// msgpackCodec is a connect-go codec for Go types in msgpack, zerodial's
// codec.
type msgpackCodec struct{}

func (msgpackCodec) Name() string                    { return "msgpack" }
func (msgpackCodec) Marshal(v any) ([]byte, error)   { return codec.Msgpack.Marshal(v) }
func (msgpackCodec) Unmarshal(b []byte, v any) error { return codec.Msgpack.Unmarshal(b, v) }

// client returns connect-go's generic client of the method at path
// ("/Calc/Add") over p, in JSON unless other options say.
func client[Req, Res any](t testing.TB, ts *httptest.Server, p protocol, path string, opts ...connect.ClientOption) *connect.Client[Req, Res] {
	opts = append([]connect.ClientOption{connect.WithCodec(jsonCodec{})}, opts...)
	if p.option != nil {
		opts = append(opts, p.option)
	}
	return connect.NewClient[Req, Res](httpClient(t, p.h2), ts.URL+path, opts...)
}

// codeOf returns the connect code of err, failing the test if err is not
// a connect error.
func codeOf(t *testing.T, err error) connect.Code {
	t.Helper()
	require.Error(t, err)
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	return ce.Code()
}

// recv returns the next value from ch, failing the test if none arrives
// within 10 s.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}
