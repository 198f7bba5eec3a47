package httpzerodial_test

import (
	"context"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// A handler's readiness (dispatch.ServerStream.Ready) reaches an HTTP
// caller as the response headers, on every protocol: a watch that
// subscribes and then calls Ready has subscribed when the caller's
// CallServerStream (which waits for the headers) and ResponseHeader
// return, so a change published then reaches it. Without Ready the
// headers would wait for the first message, which waits for the change:
// the caller would wait until its context ended.
func TestStreamReady(t *testing.T) {
	const rounds = 20
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			var mu sync.Mutex
			subs := map[int]chan int{}
			publish := func(topic int) bool {
				mu.Lock()
				defer mu.Unlock()
				ch, ok := subs[topic]
				if ok {
					ch <- topic
				}
				return ok
			}
			srv := dispatch.NewServer()
			watch := dispatch.NewServerStreamMethod[Pair, int]("Feed.Watch")
			require.NoError(t, watch.Handle(srv, func(ctx context.Context, q *Pair, out dispatch.Sender[int]) error {
				events := make(chan int, 1)
				mu.Lock()
				subs[q.A] = events
				mu.Unlock()
				defer func() {
					mu.Lock()
					delete(subs, q.A)
					mu.Unlock()
				}()
				out.Ready()
				select {
				case v := <-events:
					return out.Send(&v)
				case <-ctx.Done():
					return ctx.Err()
				}
			}))
			cl := client[Pair, int](t, serve(t, srv), p, "/Feed/Watch")
			for topic := range rounds {
				func() {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel() // a failed round ends its handler, and the caller's wait
					type opening struct {
						st  *connect.ServerStreamForClient[int]
						err error
					}
					opened := make(chan opening, 1)
					go func() {
						st, err := cl.CallServerStream(ctx, connect.NewRequest(&Pair{A: topic}))
						if err == nil {
							st.ResponseHeader()
						}
						opened <- opening{st, err}
					}()
					o := recv(t, opened, "the response headers, the handler ready")
					require.NoError(t, o.err)
					defer o.st.Close()
					require.True(t, publish(topic), "round %d: published before the watch subscribed", topic)
					require.True(t, o.st.Receive(), "round %d: %v", topic, o.st.Err())
					assert.Equal(t, topic, *o.st.Msg())
				}()
			}
		})
	}
}
