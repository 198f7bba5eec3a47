package httpzerodial_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/resolver"
)

// clientProtocol is one way Dial's Client reaches the Handler.
type clientProtocol struct {
	name string
	opts []httpzerodial.ClientOption
}

var clientProtocols = []clientProtocol{
	{"connect/msgpack", nil},
	{"connect/json", []httpzerodial.ClientOption{httpzerodial.WithJSON()}},
	{"grpc/msgpack", []httpzerodial.ClientOption{httpzerodial.WithGRPC()}},
	{"grpcweb/json", []httpzerodial.ClientOption{httpzerodial.WithGRPCWeb(), httpzerodial.WithJSON()}},
}

// dialHTTP returns a Client over HTTP to url, closed when the test ends.
func dialHTTP(t testing.TB, url string, opts ...httpzerodial.ClientOption) *dispatch.Client {
	c, err := httpzerodial.Dial(context.Background(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

var add = dispatch.NewMethod[Pair, int]("Calc.Add")

func TestClientUnary(t *testing.T) {
	for _, p := range clientProtocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			calc := newCalc(t, srv)
			ts := serve(t, srv)
			var infos []dispatch.CallInfo
			opts := append([]httpzerodial.ClientOption{httpzerodial.WithDispatchOptions(dispatch.WithInterceptors(
				func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
					ci, _ := dispatch.CallInfoFrom(ctx)
					infos = append(infos, ci)
					return next(ctx, args, reply)
				}))}, p.opts...)
			c := dialHTTP(t, ts.URL, opts...)

			var md dispatch.Metadata
			ctx := dispatch.CaptureReplyMetadata(dispatch.WithMetadata(context.Background(), dispatch.Metadata{"trace-id": "t1"}), &md)
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			sum, err := add.Call(ctx, c, Pair{A: 2, B: 3})
			require.NoError(t, err)
			assert.Equal(t, 5, sum)
			assert.Equal(t, dispatch.Metadata{"answered-by": "calc"}, md, "reply metadata from the response headers")
			got := calc.seen()
			assert.Equal(t, dispatch.Metadata{"trace-id": "t1"}, got.md)
			assert.Equal(t, dispatch.PathHTTP, got.info.Path)
			assert.True(t, got.hasDeadline, "the caller's deadline reaches the handler")
			require.Len(t, infos, 1)
			assert.Equal(t, dispatch.PathHTTP, infos[0].Path)
			assert.Equal(t, "Calc.Add", infos[0].Method)
			assert.Equal(t, ts.URL, infos[0].RemoteAddr.String())
			assert.Equal(t, "http", infos[0].RemoteAddr.Network())

			var r int
			err = c.Call(ctx, "Calc.Fail", &Pair{A: 1}, &r)
			var e *dispatch.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, dispatch.CodeFailedPrecondition, e.Code)
			assert.Equal(t, "the sum is odd", e.Message)
			assert.Equal(t, dispatch.Metadata{"why": "odd"}, md, "reply metadata with an error")

			err = c.Call(ctx, "Calc.Nope", &Pair{}, &r)
			require.ErrorAs(t, err, &e)
			assert.Equal(t, dispatch.CodeNotFound, e.Code)

			err = c.Call(ctx, "Calc.Panic", &Pair{}, &r)
			require.ErrorAs(t, err, &e)
			assert.Equal(t, dispatch.CodeInternal, e.Code)

			assert.ErrorIs(t, c.Call(ctx, "Calc.Add", &Pair{}, nil), dispatch.ErrNilReply)
		})
	}
}

func TestClientDeadlineAndCancel(t *testing.T) {
	srv := dispatch.NewServer()
	calc := newCalc(t, srv)
	ts := serve(t, srv)
	c := dialHTTP(t, ts.URL)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		var r int
		errc <- c.Call(ctx, "Calc.Hold", &Pair{}, &r)
	}()
	recv(t, calc.started, "Hold to start")
	cancel()
	err := recv(t, errc, "the call to return")
	assert.ErrorIs(t, err, context.Canceled)
	var e *dispatch.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, dispatch.CodeCanceled, e.Code)
	assert.Contains(t, err.Error(), "Calc.Hold over http: ")
	assert.ErrorIs(t, recv(t, calc.ended, "the handler's context to end"), context.Canceled)

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var r int
	err = c.Call(ctx, "Calc.Slow", &Pair{}, &r)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, dispatch.CodeDeadlineExceeded, e.Code)
	assert.Contains(t, err.Error(), "Calc.Slow over http: ")
	// The handler's context ends with the deadline, as on every path: the
	// request is not ended under it, which the handler would see as
	// context.Canceled.
	assert.ErrorIs(t, recv(t, calc.ended, "the handler's context to end"), context.DeadlineExceeded)
}

// A deadline goes in each protocol's header, rounded up: the handler's
// context ends with it, never before the caller's.
func TestClientDeadlineEachProtocol(t *testing.T) {
	for _, p := range clientProtocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			calc := newCalc(t, srv)
			ts := serve(t, srv)
			c := dialHTTP(t, ts.URL, p.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			var r int
			err := c.Call(ctx, "Calc.Slow", &Pair{}, &r)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), "Calc.Slow over http: ")
			assert.ErrorIs(t, recv(t, calc.ended, "the handler's context to end"), context.DeadlineExceeded)
			d, _ := ctx.Deadline()
			assert.False(t, calc.seen().deadline.Before(d), "the handler's deadline %v is before the caller's %v", calc.seen().deadline, d)
		})
	}
}

// A reply that does not fit the caller's type fails in the words of every
// path, decoded by the dispatch.Client.
func TestClientReplyOfAnotherType(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	c := dialHTTP(t, ts.URL)
	var r Pair
	err := c.Call(context.Background(), "Calc.Add", &Pair{A: 1}, &r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dispatch: decoding reply of Calc.Add: ")
	assert.Equal(t, Pair{}, r)
}

func TestClientErrorDetails(t *testing.T) {
	type Retry struct{ After int }
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "D.Fail", func(ctx context.Context, a *Pair, r *int) error {
		return (&dispatch.Error{Code: dispatch.CodeUnavailable, Message: "busy"}).WithDetail(Retry{After: 5})
	}))
	ts := serve(t, srv)
	for _, p := range clientProtocols {
		t.Run(p.name, func(t *testing.T) {
			c := dialHTTP(t, ts.URL, p.opts...)
			var r int
			err := c.Call(context.Background(), "D.Fail", &Pair{}, &r)
			var e *dispatch.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, dispatch.CodeUnavailable, e.Code)
			got, ok := dispatch.ErrorDetailAs[Retry](err)
			require.True(t, ok, "details: %v", e.Details())
			assert.Equal(t, 5, got.After)
		})
	}
}

func TestClientRefusesShortcutAndCodec(t *testing.T) {
	_, err := httpzerodial.Dial(context.Background(), "http://127.0.0.1:1",
		httpzerodial.WithDispatchOptions(dispatch.WithShortcut(dispatch.ShortcutDirect)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithShortcut(")
	_, err = httpzerodial.Dial(context.Background(), "http://127.0.0.1:1",
		httpzerodial.WithDispatchOptions(dispatch.WithCodec(httpzerodial.JSON)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "WithCodec")
	_, err = httpzerodial.Dial(context.Background(), "ftp://x")
	require.Error(t, err)
}

func TestClientNobodyServes(t *testing.T) {
	ln := httptest.NewServer(http.NotFoundHandler())
	url := ln.URL
	ln.Close()
	c := dialHTTP(t, url)
	var r int
	err := c.Call(context.Background(), "Calc.Add", &Pair{}, &r)
	require.Error(t, err)
	var e *dispatch.Error
	assert.False(t, errors.As(err, &e), "a failure to reach the server is not the server's answer: %v", err)
	assert.Contains(t, err.Error(), "Calc.Add over http: ")
}

// A server reached but refused before any HTTP response — its certificate
// not trusted, its port speaking something other than HTTP — is a failure
// to reach it as well, not an answer of code unavailable (connect-go's
// word for both), on a call and a stream alike.
func TestClientUnreached(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	tls := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	tls.EnableHTTP2 = true
	tls.StartTLS()
	t.Cleanup(tls.Close)
	notHTTP, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := notHTTP.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("ZDIAL not HTTP\r\n\r\n"))
			c.Close()
		}
	}()
	t.Cleanup(func() {
		notHTTP.Close()
		<-done
	})
	for name, url := range map[string]string{"untrusted": tls.URL, "not-http": "http://" + notHTTP.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			c := dialHTTP(t, url)
			var r int
			err := c.Call(context.Background(), "Calc.Add", &Pair{}, &r)
			require.Error(t, err)
			var e *dispatch.Error
			assert.False(t, errors.As(err, &e), "%v", err)
			for _, err := range dispatch.CallStream[Pair, int](context.Background(), c, "Calc.Count", &Pair{A: 1}) {
				require.Error(t, err)
				assert.False(t, errors.As(err, &e), "%v", err)
			}
		})
	}
}

// proxy returns a reverse proxy to ts, speaking HTTP/1.1 and h2c both
// ways when h2c, HTTP/1.1 only otherwise.
func proxy(t testing.TB, ts *httptest.Server, h2c bool) *httptest.Server {
	u, err := url.Parse(ts.URL)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{}
	if h2c {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
	}
	rp.Transport = tr
	ps := httptest.NewUnstartedServer(rp)
	if h2c {
		ps.Config.Protocols = httpzerodial.Protocols()
	}
	ps.Start()
	t.Cleanup(func() {
		ps.Close()
		tr.CloseIdleConnections()
	})
	return ps
}

func TestClientThroughProxy(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		name := "http1"
		if h2c {
			name = "h2c"
		}
		t.Run(name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			ps := proxy(t, ts, h2c)
			for _, p := range clientProtocols {
				if p.name == "grpc/msgpack" && !h2c {
					continue // gRPC needs HTTP/2
				}
				t.Run(p.name, func(t *testing.T) {
					c := dialHTTP(t, ps.URL, p.opts...)
					var md dispatch.Metadata
					ctx := dispatch.CaptureReplyMetadata(context.Background(), &md)
					sum, err := add.Call(ctx, c, Pair{A: 2, B: 3})
					require.NoError(t, err)
					assert.Equal(t, 5, sum)
					assert.Equal(t, dispatch.Metadata{"answered-by": "calc"}, md)
					var r int
					var e *dispatch.Error
					require.ErrorAs(t, c.Call(ctx, "Calc.Fail", &Pair{A: 1}, &r), &e)
					assert.Equal(t, dispatch.CodeFailedPrecondition, e.Code)
				})
			}
		})
	}
}

// Metadata a header cannot carry is refused with CodeInvalidArgument, in
// words that say so, before anything is sent: never dropped in silence.
func TestClientMetadataNotAHeader(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	c := dialHTTP(t, ts.URL)
	for _, md := range []dispatch.Metadata{{"ключ": "v"}, {"k": "a\nb"}} {
		var r int
		err := c.Call(dispatch.WithMetadata(context.Background(), md), "Calc.Add", &Pair{}, &r)
		var e *dispatch.Error
		require.ErrorAs(t, err, &e, "%v", md)
		assert.Equal(t, dispatch.CodeInvalidArgument, e.Code)
		assert.Contains(t, e.Message, "HTTP header")
		s, err := dispatch.OpenStream[Pair, int](dispatch.WithMetadata(context.Background(), md), c, "Calc.Echo")
		require.NoError(t, err)
		for _, err := range s.Recv() {
			require.ErrorAs(t, err, &e)
			assert.Equal(t, dispatch.CodeInvalidArgument, e.Code)
		}
	}
}

// A reply over the read limit fails the call as a frame over the limit
// does on zerodial's wire.
func TestClientReplyOverLimit(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Big.Make", func(ctx context.Context, n *int, r *[]byte) error {
		*r = make([]byte, *n)
		return nil
	}))
	ts := serve(t, srv)
	c := dialHTTP(t, ts.URL, httpzerodial.WithClientConnectOptions(connect.WithReadMaxBytes(1000)))
	var r []byte
	err := c.Call(context.Background(), "Big.Make", new(2000), &r)
	assert.ErrorIs(t, err, transport.ErrFrameTooLarge)
	assert.ErrorIs(t, err, dispatch.ErrShutdown)
	assert.Contains(t, err.Error(), "Big.Make over http: ")
	require.NoError(t, c.Call(context.Background(), "Big.Make", new(10), &r))
	assert.Len(t, r, 10)
}

// Replicas over several base URLs: a call goes to one that answers, and
// one that does not (nobody serves its address) is ejected, as on every
// path; the handler's shutdown refusal (unavailable) sends the call to
// another.
func TestClientReplicas(t *testing.T) {
	var urls []string
	for range 2 {
		srv := dispatch.NewServer()
		newCalc(t, srv)
		urls = append(urls, strings.TrimPrefix(serve(t, srv).URL, "http://"))
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	c := dialHTTP(t, "static:///"+strings.Join(append(urls, deadAddr), ","),
		httpzerodial.WithDispatchOptions(dispatch.WithResolver(resolver.Default)))
	for range 20 {
		sum, err := add.Call(context.Background(), c, Pair{A: 2, B: 3})
		require.NoError(t, err)
		assert.Equal(t, 5, sum)
	}
	states := c.Replicas()
	require.Len(t, states, 3)
	for _, st := range states {
		if st.Addr == deadAddr {
			assert.False(t, st.In, "the replica nobody serves is out: %+v", st)
			assert.Error(t, st.Why, "why it is out")
			assert.Contains(t, fmt.Sprint(st.Why), "connection refused")
		} else {
			assert.True(t, st.In, "%+v", st)
		}
	}
}

// Close ends the calls in flight with dispatch.ErrShutdown, and the
// handler's context with them: on the Client's own transports, whose
// connections Close closes, and on a program's http.Client, whose
// requests it cancels.
func TestClientCloseEndsCalls(t *testing.T) {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	for name, opts := range map[string][]httpzerodial.ClientOption{
		"own":         nil,
		"grpc":        {httpzerodial.WithGRPC()},
		"http.Client": {httpzerodial.WithHTTPClient(&http.Client{Transport: tr})},
	} {
		t.Run(name, func(t *testing.T) {
			srv := dispatch.NewServer()
			calc := newCalc(t, srv)
			ts := serve(t, srv)
			c, err := httpzerodial.Dial(context.Background(), ts.URL, opts...)
			require.NoError(t, err)
			errc := make(chan error, 1)
			go func() {
				var r int
				errc <- c.Call(context.Background(), "Calc.Hold", &Pair{}, &r)
			}()
			recv(t, calc.started, "Hold to start")
			require.NoError(t, c.Close())
			assert.ErrorIs(t, recv(t, errc, "the call to return"), dispatch.ErrShutdown)
			assert.ErrorIs(t, recv(t, calc.ended, "the handler's context to end"), context.Canceled)
			var r int
			assert.ErrorIs(t, c.Call(context.Background(), "Calc.Add", &Pair{}, &r), dispatch.ErrShutdown)
		})
	}
}

// Reply metadata in the form grpczerodial writes gRPC's headers and
// trailers ("key#1" a further value, "key#t" a trailer's entry) crosses a
// unary call as it was set, on every protocol: the Handler writes it as
// several header values and as trailers, and Dial's Client reads them back
// into the same keys. A stream's trailers, which hold all that its handler
// set once it was ready, are read as plain keys.
func TestClientReplyMetadataForms(t *testing.T) {
	set := dispatch.Metadata{"h": "1", "h#1": "2", "h#2": "3", "t#t": "4", "t#t1": "5", "b-bin": "\x00\xff", "b-bin#t": "\x01"}
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Forms.Unary", func(ctx context.Context, args *Pair, reply *int) error {
		return dispatch.SetReplyMetadata(ctx, set)
	}))
	require.NoError(t, dispatch.HandleStream(srv, "Forms.Stream", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"early": "e", "early#1": "f"}); err != nil {
			return err
		}
		if err := s.Send(new(int)); err != nil {
			return err
		}
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"late": "l", "late#1": "m"})
	}))
	ts := serve(t, srv)
	for _, p := range clientProtocols {
		t.Run(p.name, func(t *testing.T) {
			c := dialHTTP(t, ts.URL, p.opts...)
			var md dispatch.Metadata
			ctx := dispatch.CaptureReplyMetadata(context.Background(), &md)
			var r int
			require.NoError(t, c.Call(ctx, "Forms.Unary", &Pair{}, &r))
			assert.Equal(t, set, md)

			md = nil
			for _, err := range dispatch.CallStream[Pair, int](ctx, c, "Forms.Stream", &Pair{}) {
				require.NoError(t, err)
			}
			assert.Equal(t, dispatch.Metadata{"early": "e", "early#1": "f", "late": "l", "late#1": "m"}, md)
		})
	}
}
