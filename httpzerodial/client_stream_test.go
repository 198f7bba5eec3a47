package httpzerodial_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// streamShapes checks every stream shape over c; grpc says that c speaks
// gRPC or gRPC-Web.
func streamShapes(t *testing.T, c *dispatch.Client, grpc bool) {
	t.Helper()
	var md dispatch.Metadata
	ctx := dispatch.CaptureReplyMetadata(dispatch.WithMetadata(context.Background(), dispatch.Metadata{"who": "me"}), &md)

	// Server streaming.
	var got []int
	for n, err := range dispatch.CallStream[Pair, int](ctx, c, "Calc.Count", &Pair{A: 3}) {
		require.NoError(t, err)
		got = append(got, *n)
	}
	assert.Equal(t, []int{1, 2, 3}, got)
	assert.Equal(t, dispatch.Metadata{"counted": "yes"}, md, "reply metadata from the trailers")

	// Its handler's error, with its code.
	var errs []error
	for _, err := range dispatch.CallStream[Pair, int](ctx, c, "Calc.Count", &Pair{A: -1}) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	var e *dispatch.Error
	require.ErrorAs(t, errs[0], &e)
	assert.Equal(t, dispatch.CodeOutOfRange, e.Code)

	// Bidi: each message answered before the next is sent.
	s, err := dispatch.OpenStream[Pair, int](ctx, c, "Calc.Echo")
	require.NoError(t, err)
	next, stop := iterPull(s)
	defer stop()
	for i := range 3 {
		require.NoError(t, s.Send(&Pair{A: i, B: 10}))
		v, err := next()
		require.NoError(t, err)
		assert.Equal(t, i+10, v)
	}
	require.NoError(t, s.CloseSend())
	_, err = next()
	assert.Equal(t, errEnd, err)

	// Client streaming.
	s, err = dispatch.OpenStream[Pair, int](ctx, c, "Calc.Total")
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, s.Send(&Pair{A: i, B: 1}))
	}
	require.NoError(t, s.CloseSend())
	got = got[:0]
	for n, err := range s.Recv() {
		require.NoError(t, err)
		got = append(got, *n)
	}
	assert.Equal(t, []int{10}, got)

	// A stream of a unary method: the shape rule, over Connect. A gRPC
	// request does not say its shape: the Handler answers it as the unary
	// call it names, one message.
	errs = errs[:0]
	got = got[:0]
	for n, err := range dispatch.CallStream[Pair, int](ctx, c, "Calc.Add", &Pair{A: 1, B: 2}) {
		if err != nil {
			errs = append(errs, err)
		} else {
			got = append(got, *n)
		}
	}
	if grpc {
		assert.Empty(t, errs)
		assert.Equal(t, []int{3}, got)
		return
	}
	require.Len(t, errs, 1)
	require.ErrorAs(t, errs[0], &e)
	assert.Equal(t, dispatch.CodeInvalidArgument, e.Code)
}

// isGRPC says whether p speaks gRPC or gRPC-Web.
func isGRPC(p clientProtocol) bool { return strings.HasPrefix(p.name, "grpc") }

var errEnd = errorString("end of stream")

type errorString string

func (e errorString) Error() string { return string(e) }

// iterPull pulls the messages of s one at a time: errEnd after the last.
func iterPull(s *dispatch.Stream[Pair, int]) (func() (int, error), func()) {
	type item struct {
		v   int
		err error
	}
	ch := make(chan item)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for v, err := range s.Recv() {
			it := item{err: err}
			if v != nil {
				it.v = *v
			}
			select {
			case ch <- it:
			case <-done:
				return
			}
		}
	}()
	next := func() (int, error) {
		it, ok := <-ch
		if !ok {
			return 0, errEnd
		}
		return it.v, it.err
	}
	stop := func() {
		close(done)
		s.Close()
		for range ch {
		}
	}
	return next, stop
}

func TestClientStreams(t *testing.T) {
	for _, p := range clientProtocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			streamShapes(t, dialHTTP(t, ts.URL, p.opts...), isGRPC(p))
		})
	}
}

func TestClientStreamsThroughProxy(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	ps := proxy(t, ts, true)
	for _, p := range clientProtocols {
		t.Run(p.name, func(t *testing.T) {
			streamShapes(t, dialHTTP(t, ps.URL, p.opts...), isGRPC(p))
		})
	}
}

// Over HTTP/1.1 a stream carries one message from the caller, then the
// handler's: CallStream's shape works, and a bidi or client stream is
// refused with a clear error.
func TestDialStreamOverHTTP1(t *testing.T) {
	srv := dispatch.NewServer()
	calc := newCalc(t, srv)
	ts := serve(t, srv)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	// Over TLS, a transport whose Protocols leave HTTP/2 out.
	tlsServer := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	tlsServer.EnableHTTP2 = true
	tlsServer.StartTLS()
	t.Cleanup(tlsServer.Close)
	tlsTr := tlsServer.Client().Transport.(*http.Transport).Clone()
	tlsTr.Protocols = new(http.Protocols)
	tlsTr.Protocols.SetHTTP1(true)
	tlsTr.TLSClientConfig.NextProtos = nil // httptest's client offers h2 in ALPN
	t.Cleanup(tlsTr.CloseIdleConnections)
	for _, s := range []struct {
		url string
		tr  *http.Transport
	}{{ts.URL, tr}, {proxy(t, ts, false).URL, tr}, {tlsServer.URL, tlsTr}} {
		url := s.url
		c := dialHTTP(t, url, httpzerodial.WithHTTPClient(&http.Client{Transport: s.tr}))
		var md dispatch.Metadata
		ctx := dispatch.CaptureReplyMetadata(dispatch.WithMetadata(context.Background(), dispatch.Metadata{"who": "me"}), &md)
		var got []int
		for n, err := range dispatch.CallStream[Pair, int](ctx, c, "Calc.Count", &Pair{A: 2}) {
			require.NoError(t, err)
			got = append(got, *n)
		}
		assert.Equal(t, []int{1, 2}, got)
		assert.Equal(t, dispatch.Metadata{"counted": "yes"}, md)
		assert.Equal(t, "me", calc.seen().md["who"], "a proxy adds X-Forwarded-For")

		// Bidi: a Recv before CloseSend.
		s, err := dispatch.OpenStream[Pair, int](context.Background(), c, "Calc.Echo")
		require.NoError(t, err)
		require.NoError(t, s.Send(&Pair{A: 1}))
		var errs []error
		for _, err := range s.Recv() {
			errs = append(errs, err)
		}
		require.Len(t, errs, 1)
		var e *dispatch.Error
		require.ErrorAs(t, errs[0], &e)
		assert.Equal(t, dispatch.CodeUnimplemented, e.Code)
		assert.Contains(t, e.Message, "Calc.Echo over HTTP/1.1 carries one message from the caller")
		assert.Contains(t, e.Message, "need HTTP/2")
		s.Close()

		// Client streaming: a second message.
		s, err = dispatch.OpenStream[Pair, int](context.Background(), c, "Calc.Total")
		require.NoError(t, err)
		require.NoError(t, s.Send(&Pair{A: 1}))
		err = s.Send(&Pair{A: 2})
		require.ErrorAs(t, err, &e)
		assert.Equal(t, dispatch.CodeUnimplemented, e.Code)
		s.Close()
	}
}

// A stream with a deadline: the deadline's passing does not end the
// request, whose end the handler would see as a cancellation, but the
// server's own deadline ends the handler's context, with
// context.DeadlineExceeded as on every path; and the caller returns at
// its deadline all the same, though the handler ignores its context and
// has not answered. Over h2c and over HTTP/1.1 (one way).
func TestClientStreamDeadline(t *testing.T) {
	srv := dispatch.NewServer()
	ended := make(chan error, 1)
	release := make(chan struct{})
	require.NoError(t, dispatch.HandleStream(srv, "Clock.Wait", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		if err := s.Send(new(1)); err != nil {
			return err
		}
		<-ctx.Done()
		ended <- ctx.Err()
		return ctx.Err()
	}))
	require.NoError(t, dispatch.HandleStream(srv, "Clock.Blind", func(ctx context.Context, s *dispatch.ServerStream[Pair, int]) error {
		if err := s.Send(new(1)); err != nil {
			return err
		}
		<-release
		return nil
	}))
	ts := serve(t, srv)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	for name, opts := range map[string][]httpzerodial.ClientOption{
		"h2c":   nil,
		"http1": {httpzerodial.WithHTTPClient(&http.Client{Transport: tr})},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialHTTP(t, ts.URL, opts...)
			call := func(method string) ([]int, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				var got []int
				for n, err := range dispatch.CallStream[Pair, int](ctx, c, method, &Pair{}) {
					if err != nil {
						return got, err
					}
					got = append(got, *n)
				}
				return got, nil
			}
			got, err := call("Clock.Wait")
			assert.Equal(t, []int{1}, got)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, recv(t, ended, "the handler's context to end"), context.DeadlineExceeded)

			got, err = call("Clock.Blind")
			assert.Equal(t, []int{1}, got)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), "Clock.Blind over http: ")
		})
	}
	close(release)
}
