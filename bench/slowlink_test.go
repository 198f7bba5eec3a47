package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// BenchmarkSlowLink times one Echo call through a userspace proxy on
// loopback that carries 100 Mbit/s each way (slowLink), for zerodial's tcp
// and mux transports with compression on (the default) and off ("-plain",
// WithoutCompression at both ends). Payloads: 16B is the Multiply call;
// text-1MiB is JSON-like text, which S2 shrinks about 3.5 times;
// random-1MiB cannot be shrunk. Compression pays where bandwidth is short:
// the report checks that text is at least 3 times faster compressed, and
// that random bytes and small calls are no slower.
func BenchmarkSlowLink(b *testing.B) {
	for _, impl := range slowLinkImpls {
		b.Run(impl.name, func(b *testing.B) {
			for _, p := range slowLinkPayloads {
				b.Run(p.name, func(b *testing.B) {
					link := newSlowLink(slowLinkRate)
					call := impl.dial(b, link)
					ctx := context.Background()
					if p.data == nil {
						args, reply := &Args{A: 7, B: 6}, &Product{}
						for b.Loop() {
							if err := call(ctx, multiply, args, reply); err != nil {
								b.Fatal(err)
							}
						}
						return
					}
					args := &Payload{Data: p.data}
					b.SetBytes(int64(len(p.data)))
					// One call first: a sample of 1 MiB rows holds only
					// about a dozen calls, and the first grows buffers.
					if err := call(ctx, echo, args, &Payload{}); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						var reply Payload
						if err := call(ctx, echo, args, &reply); err != nil {
							b.Fatal(err)
						}
						if len(reply.Data) != len(p.data) {
							b.Fatalf("echo of %d bytes returned %d", len(p.data), len(reply.Data))
						}
					}
				})
			}
		})
	}
}

// slowLinkRate is the proxy's bandwidth in each direction: 100 Mbit/s.
const slowLinkRate = 100e6 / 8

var slowLinkPayloads = []struct {
	name string
	data []byte
}{
	{"16B", nil},
	{"text-1MiB", jsonLike(1 << 20)},
	{"random-1MiB", payload(1 << 20)},
}

// slowLinkImpls are the rows: each dials the proxy, whose far end is a
// Server of the same transport and options.
var slowLinkImpls = []struct {
	name string
	dial func(tb testing.TB, link *slowLink) callFunc
}{
	{"zerodial-tcp", func(tb testing.TB, l *slowLink) callFunc { return slowLinkDial(tb, l, tcp.New(), tcp.New()) }},
	{"zerodial-tcp-plain", func(tb testing.TB, l *slowLink) callFunc {
		return slowLinkDial(tb, l, tcp.New(tcp.WithoutCompression()), tcp.New(tcp.WithoutCompression()))
	}},
	{"zerodial-mux", func(tb testing.TB, l *slowLink) callFunc { return slowLinkDial(tb, l, mux.New(), mux.New()) }},
	{"zerodial-mux-plain", func(tb testing.TB, l *slowLink) callFunc {
		return slowLinkDial(tb, l, mux.New(mux.WithoutCompression()), mux.New(mux.WithoutCompression()))
	}},
}

// slowLinkDial serves Arith on server and dials it through link with
// client.
func slowLinkDial(tb testing.TB, link *slowLink, server, client transport.Transport) callFunc {
	for _, t := range []transport.Transport{server, client} {
		tb.Cleanup(func() { t.Close() })
	}
	addr := serveZerodial(tb, server, "127.0.0.1:0", registerReflect)
	return dialZerodial(tb, client, link.to(tb, addr))()
}

// jsonLike returns n bytes of JSON-like text: records with the same keys
// and varied values, as an API's list response has.
func jsonLike(n int) []byte {
	var b bytes.Buffer
	x := uint32(2463534242)
	next := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	names := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"}
	b.WriteString("[")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"%s-%d","email":"%s%d@example.com","active":%t,"score":%d.%03d,"tags":["t%d","t%d"]},`,
			i, names[next()%8], next()%10000, names[next()%8], next()%1000, next()%2 == 0, next()%100, next()%1000, next()%50, next()%50)
	}
	return b.Bytes()[:n]
}

// slowLink is a TCP proxy on loopback that carries at most rate bytes per
// second in each direction of each connection, as a slow network link
// would, with a burst of at most one 32 KiB read.
type slowLink struct {
	rate float64
	wg   sync.WaitGroup
}

func newSlowLink(rate float64) *slowLink { return &slowLink{rate: rate} }

// to listens on loopback and forwards every connection to addr through the
// link; it returns the address to dial. Everything ends with the test.
func (l *slowLink) to(tb testing.TB, addr string) string {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	tb.Cleanup(func() {
		nl.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		l.wg.Wait()
	})
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			in, err := nl.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			l.wg.Add(2)
			go l.pipe(out, in)
			go l.pipe(in, out)
		}
	}()
	return nl.Addr().String()
}

// pipe copies src to dst at the link's rate: each read of up to 32 KiB
// is written once the link has had time to carry it, measured from when
// the link was last idle (a token bucket that holds one read).
func (l *slowLink) pipe(dst, src net.Conn) {
	defer l.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	var free time.Time // when the link is done with what it carries
	for {
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			if free.Before(now) {
				free = now
			}
			free = free.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
			time.Sleep(time.Until(free))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}
