package httpzerodial_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/tcp"
)

func TestOnePort(t *testing.T) {
	// zerodial's wire and HTTP (HTTP/1.1 and h2c) on one port: the tcp
	// listener hands what is not zerodial to the fallback, whose HTTP
	// connections the http.Server serves.
	fb, err := fallback.New()
	require.NoError(t, err)
	web := fb.Split(fallback.HTTP, fallback.HTTP2)
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	l, err := tcp.New(tcp.WithFallback(fb)).Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	hs := &http.Server{Handler: httpzerodial.NewHandler(srv), Protocols: httpzerodial.Protocols()}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(web) }()
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		l.Close()
		fb.Close()
		<-served
	})
	addr := l.Addr().String()

	zc, err := dispatch.Dial(context.Background(), tcp.New(), addr)
	require.NoError(t, err)
	defer zc.Close()
	var n int
	require.NoError(t, zc.Call(context.Background(), "Calc.Add", Pair{A: 1, B: 2}, &n))
	assert.Equal(t, 3, n)
	assert.Equal(t, dispatch.Path("tcp"), c.seen().info.Path)

	for _, p := range []protocol{protocols[0], protocols[2]} {
		opts := []connect.ClientOption{connect.WithCodec(jsonCodec{})}
		if p.option != nil {
			opts = append(opts, p.option)
		}
		cl := connect.NewClient[Pair, int](httpClient(t, p.h2), "http://"+addr+"/Calc/Add", opts...)
		res, err := cl.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 2, B: 2}))
		require.NoError(t, err, p.name)
		assert.Equal(t, 4, *res.Msg)
		assert.Equal(t, dispatch.PathHTTP, c.seen().info.Path, p.name)
	}
}
