package dispatch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// A caller whose context ends costs no other caller: calls and streams
// whose contexts end at random, on one Client, beside calls and streams
// whose contexts never end, leave the connection serving every one of the
// latter, each with its own reply. Before, about one run of gRPC's interop
// cases in ten failed so, and this test every run:
//   - an interruption outlived the Send it was for (the write deadline a
//     context set failed the next caller's Send, or a stream's message
//     queued beside it) and ended the connection for all ("connection is
//     shut down: transport: i/o timeout"); so did a write the peer was
//     taking, interrupted at once (frame.InterruptGrace);
//   - a caller that gave up just as its reply came took the next call's
//     registration under the same Seq for its own (clientConn.remove):
//     that call's reply was dropped, and a later call took the stale
//     signal for its answer — a nil reply decoded, a panic in the read
//     loop.
func TestCancelInterruptsOnlyItsCaller(t *testing.T) {
	for _, p := range []struct {
		name string
		tr   func() transport.Transport
		addr string
	}{
		{"memory", func() transport.Transport { return memory.New() }, ""},
		{"tcp", func() transport.Transport { return tcp.New() }, "127.0.0.1:0"},
		{"mux", func() transport.Transport { return mux.New() }, "127.0.0.1:0"},
	} {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			require.NoError(t, dispatch.Handle(srv, "Echo.Call", func(ctx context.Context, a *[]byte, r *[]byte) error {
				*r = *a
				return nil
			}))
			require.NoError(t, dispatch.HandleStream(srv, "Echo.Stream", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
				for m, err := range s.Recv() {
					if err != nil {
						return err
					}
					if err := s.Send(m); err != nil {
						return err
					}
				}
				return nil
			}))
			tr := p.tr()
			if c, ok := tr.(interface{ Close() error }); ok {
				t.Cleanup(func() { c.Close() })
			}
			addr := serve(t, srv, tr, p.addr)
			c, err := dispatch.Dial(context.Background(), tr, addr)
			require.NoError(t, err)
			defer c.Close()

			const workers, rounds = 8, 300
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 1))
					body := make([]byte, 1+rng.IntN(64<<10))
					for range rounds {
						canceled := w%2 == 0
						ctx, cancel := context.WithCancel(context.Background())
						if canceled {
							d := time.Duration(rng.IntN(200)) * time.Microsecond
							time.AfterFunc(d, cancel)
						}
						var err error
						if rng.IntN(2) == 0 {
							var r []byte
							err = c.Call(ctx, "Echo.Call", &body, &r)
							if err == nil && !bytes.Equal(r, body) {
								err = fmt.Errorf("a reply of %d bytes to a call of %d: another call's", len(r), len(body))
							}
						} else {
							err = stream(ctx, c, &body)
						}
						cancel()
						if err != nil && !(canceled && errors.Is(err, context.Canceled)) {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// stream sends body twice on a stream of Echo.Stream and reads both back.
func stream(ctx context.Context, c *dispatch.Client, body *[]byte) error {
	s, err := dispatch.OpenStream[[]byte, []byte](ctx, c, "Echo.Stream")
	if err != nil {
		return err
	}
	defer s.Close()
	for range 2 {
		if err := s.Send(body); err != nil {
			return err
		}
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for m, err := range s.Recv() {
		if err != nil {
			return err
		}
		if !bytes.Equal(*m, *body) {
			return fmt.Errorf("a message of %d bytes on a stream of %d: another stream's", len(*m), len(*body))
		}
	}
	return nil
}
