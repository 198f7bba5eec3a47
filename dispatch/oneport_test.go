package dispatch_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/fallback"
	"github.com/zerodial/transport/gobrpc"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// onePortKind is a transport whose listener takes a fallback: how to make
// the listening and the dialling Transport, with TLS configurations or
// none, and the options it gets besides.
type onePortKind struct {
	name   string
	listen func(fb *fallback.Listener, cfg *tls.Config, handshake time.Duration) transport.Transport
	dial   func(cfg *tls.Config) transport.Transport
}

var onePortKinds = []onePortKind{
	{
		name: "tcp",
		listen: func(fb *fallback.Listener, cfg *tls.Config, handshake time.Duration) transport.Transport {
			return tcp.New(tcp.WithFallback(fb), tcp.WithTLS(cfg), tcp.WithHandshakeTimeout(handshake))
		},
		dial: func(cfg *tls.Config) transport.Transport { return tcp.New(tcp.WithTLS(cfg)) },
	},
	{
		name: "mux",
		listen: func(fb *fallback.Listener, cfg *tls.Config, handshake time.Duration) transport.Transport {
			return mux.New(mux.WithFallback(fb), mux.WithTLS(cfg), mux.WithHandshakeTimeout(handshake))
		},
		dial: func(cfg *tls.Config) transport.Transport { return mux.New(mux.WithTLS(cfg)) },
	},
}

// onePort is a dispatch Server on a zerodial listener with a fallback,
// whose other kinds are served on the same port: gob and JSON-RPC through
// ServeCodec, HTTP by an http.Server on a Split listener.
type onePort struct {
	addr string
	fb   *fallback.Listener
	dial transport.Transport // a zerodial client's transport
}

// startOnePort starts it all; everything stops, and every goroutine ends,
// when the test does. cfg, when not nil, is the server's TLS configuration
// and clientCfg the client's. serveFallback false leaves the fallback with
// nobody accepting.
func startOnePort(t *testing.T, k onePortKind, cfg, clientCfg *tls.Config, handshake time.Duration, serveFallback bool, fbOpts ...fallback.Option) *onePort {
	t.Helper()
	fb, err := fallback.New(fbOpts...)
	require.NoError(t, err)
	web := fb.Split(fallback.HTTP, fallback.HTTP2)

	srv := dispatch.NewServer()
	require.NoError(t, srv.RegisterName("Arith", newArith()))
	l, err := k.listen(fb, cfg, handshake).Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))

	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s over %s, tls %v", r.URL.Path, r.Proto, r.TLS != nil)
	})}
	var wg sync.WaitGroup
	if serveFallback {
		wg.Go(func() { hs.Serve(web) })
		wg.Go(func() {
			for {
				c, err := fb.Accept()
				if err != nil {
					return
				}
				switch fallback.KindOf(c) {
				case fallback.Gob:
					wg.Go(func() { srv.ServeCodec(gobrpc.NewServerCodec(c)) })
				case fallback.JSON:
					wg.Go(func() { srv.ServeCodec(jsonrpc.NewServerCodec(c)) })
				default:
					c.Close()
				}
			}
		})
	}
	dial := k.dial(clientCfg)
	t.Cleanup(func() {
		srv.Close()
		l.Close()
		hs.Close()
		fb.Close()
		wg.Wait()
		dial.Close()
	})
	return &onePort{addr: l.Addr().String(), fb: fb, dial: dial}
}

// checkMultiply makes one call of Arith.Multiply and checks its answer.
func checkMultiply(t *testing.T, who string, call func(args Args, reply *int) error, a int) {
	var n int
	if assert.NoError(t, call(Args{a, 7}, &n), who) {
		assert.Equal(t, a*7, n, who)
	}
}

// TestOnePort: a zerodial client, net/rpc's gob client, its JSON-RPC
// client and an HTTP client call one port at the same time, over tcp and
// mux, in the clear and over TLS, and each gets its own answers.
func TestOnePort(t *testing.T) {
	for _, k := range onePortKinds {
		for _, useTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", k.name, useTLS), func(t *testing.T) {
				var serverCfg, clientCfg *tls.Config
				if useTLS {
					serverCfg, clientCfg = testcert.Configs(t)
				}
				p := startOnePort(t, k, serverCfg, clientCfg, 10*time.Second, true)
				dialRaw := func() net.Conn {
					if useTLS {
						c, err := tls.Dial("tcp", p.addr, clientCfg)
						require.NoError(t, err)
						return c
					}
					c, err := net.Dial("tcp", p.addr)
					require.NoError(t, err)
					return c
				}
				httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: clientCfg}}
				defer httpClient.CloseIdleConnections()
				scheme := "http"
				if useTLS {
					scheme = "https"
				}

				const each, calls = 4, 5
				var wg sync.WaitGroup
				for i := range each {
					wg.Go(func() {
						c, err := dispatch.Dial(t.Context(), p.dial, p.addr)
						if !assert.NoError(t, err) {
							return
						}
						defer c.Close()
						for j := range calls {
							checkMultiply(t, "zerodial", func(args Args, reply *int) error {
								return c.Call(t.Context(), "Arith.Multiply", args, reply)
							}, i*10+j)
						}
					})
					wg.Go(func() {
						c := rpc.NewClient(dialRaw())
						defer c.Close()
						for j := range calls {
							checkMultiply(t, "gob", func(args Args, reply *int) error {
								return c.Call("Arith.Multiply", args, reply)
							}, i*10+j)
						}
					})
					wg.Go(func() {
						c := jsonrpc.NewClient(dialRaw())
						defer c.Close()
						for j := range calls {
							checkMultiply(t, "json", func(args Args, reply *int) error {
								return c.Call("Arith.Multiply", args, reply)
							}, i*10+j)
						}
					})
					wg.Go(func() {
						for j := range calls {
							resp, err := httpClient.Get(fmt.Sprintf("%s://%s/%d", scheme, p.addr, i*10+j))
							if !assert.NoError(t, err) {
								return
							}
							body, err := io.ReadAll(resp.Body)
							resp.Body.Close()
							assert.NoError(t, err)
							// A TLS client that negotiated no ALPN protocol is
							// read to tell its kind, so the http.Server sees a
							// wrapped connection, not a *tls.Conn.
							assert.Equal(t, fmt.Sprintf("hello /%d over HTTP/1.1, tls false", i*10+j), string(body))
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// TestOnePortALPN: over TLS, a web client that negotiates h2 by ALPN is
// handed to the fallback as the *tls.Conn itself, unread, so the
// http.Server serves it HTTP/2 and sees its TLS; a zerodial client, which
// offers no ALPN protocol, is still served on the same port.
func TestOnePortALPN(t *testing.T) {
	for _, k := range onePortKinds {
		t.Run(k.name, func(t *testing.T) {
			serverCfg, clientCfg := testcert.Configs(t)
			serverCfg.NextProtos = []string{"h2", "http/1.1"}
			p := startOnePort(t, k, serverCfg, clientCfg, 10*time.Second, true)

			httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: clientCfg.Clone(), ForceAttemptHTTP2: true}}
			defer httpClient.CloseIdleConnections()
			resp, err := httpClient.Get("https://" + p.addr + "/h2")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, "hello /h2 over HTTP/2.0, tls true", string(body))

			c, err := dispatch.Dial(t.Context(), p.dial, p.addr)
			require.NoError(t, err)
			defer c.Close()
			checkMultiply(t, "zerodial", func(args Args, reply *int) error {
				return c.Call(t.Context(), "Arith.Multiply", args, reply)
			}, 6)
		})
	}
}

// readsNothing checks that the server closes c without having sent it a
// byte.
func readsNothing(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(c)
	assert.Empty(t, got, "the server sent bytes to a client that did not speak zerodial")
	if err != nil {
		assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the connection was not closed")
	}
}

// TestOnePortStalled: peers that send three bytes and stop (the start of
// a zerodial preface, or of an HTTP method), or nothing at all, are
// dropped at the handshake timeout without a byte from the server; they
// held every place of the listener's, and a zerodial client that came
// after them is served once they are dropped, so the places were freed.
func TestOnePortStalled(t *testing.T) {
	const places = 256 // tcp's acceptBacklog and mux's setupBacklog
	for _, k := range onePortKinds {
		t.Run(k.name, func(t *testing.T) {
			p := startOnePort(t, k, nil, nil, 300*time.Millisecond, true)
			peers := make([]net.Conn, places)
			for i := range peers {
				c, err := net.Dial("tcp", p.addr)
				require.NoError(t, err)
				defer c.Close()
				switch i % 3 {
				case 0:
					_, err = c.Write([]byte("ZDI"))
				case 1:
					_, err = c.Write([]byte("POS"))
				}
				require.NoError(t, err)
				peers[i] = c
			}
			c, err := dispatch.Dial(t.Context(), p.dial, p.addr)
			require.NoError(t, err, "the listener's places were not freed")
			defer c.Close()
			checkMultiply(t, "zerodial", func(args Args, reply *int) error {
				return c.Call(t.Context(), "Arith.Multiply", args, reply)
			}, 3)
			for _, peer := range peers {
				readsNothing(t, peer)
			}
		})
	}
}

// TestOnePortFlood: a flood of JSON-RPC clients with nobody accepting the
// fallback's connections: the fallback keeps as many as its queue holds and
// closes the rest, and zerodial clients are served all the while.
//
// A client is kept if its connection stays open until the fallback closes:
// its read ends only then. (A client not closed within 2 s was counted
// kept, and one a loaded machine closed later made too many.)
func TestOnePortFlood(t *testing.T) {
	const queue, flood = 4, 64
	for _, k := range onePortKinds {
		t.Run(k.name, func(t *testing.T) {
			p := startOnePort(t, k, nil, nil, 10*time.Second, false, fallback.WithQueue(queue))
			type ended struct {
				c   net.Conn
				n   int
				err error
				at  time.Time
			}
			ends := make(chan ended, flood)
			var wg sync.WaitGroup
			for range flood {
				wg.Go(func() {
					c, err := net.Dial("tcp", p.addr)
					if !assert.NoError(t, err) {
						return
					}
					if _, err := c.Write([]byte(`{"method":"Arith.Multiply","params":[{"A":1,"B":2}],"id":0}`)); err != nil {
						ends <- ended{c, 0, err, time.Now()}
						return
					}
					c.SetReadDeadline(time.Now().Add(4 * waitLong)) // a hang guard
					n, err := c.Read(make([]byte, 1))
					ends <- ended{c, n, err, time.Now()}
				})
			}
			zc, err := dispatch.Dial(t.Context(), p.dial, p.addr)
			require.NoError(t, err)
			defer zc.Close()
			for i := range 20 {
				checkMultiply(t, "zerodial", func(args Args, reply *int) error {
					return zc.Call(t.Context(), "Arith.Multiply", args, reply)
				}, i)
			}
			end := func(what string) ended {
				e := recv(t, ends, waitLong, what)
				assert.Zero(t, e.n, "the server sent bytes to a client that did not speak zerodial")
				assert.NotErrorIs(t, e.err, os.ErrDeadlineExceeded, "%s: not closed", what)
				e.c.Close()
				return e
			}
			for range flood - queue {
				end("a connection closed past the fallback's queue")
			}
			// The rest are kept: none ends until the fallback closes, and
			// then every one does.
			quiet(t, ends, "the end of a connection the fallback's queue holds")
			closed := time.Now()
			p.fb.Close()
			for range queue {
				e := end("a kept connection, closed with the fallback")
				assert.False(t, e.at.Before(closed), "a connection the fallback's queue held ended before the fallback closed")
			}
			wg.Wait()
		})
	}
}
