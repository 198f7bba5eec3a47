package bench

import (
	"context"
	"encoding/binary"
	"io"
	"iter"
	"net"
	"reflect"
	"sync"
	"testing"
)

// The floors do the least work any implementation of the same call must
// do on its path: dispatch by reflection, a hand-off between goroutines, a
// round trip over loopback TCP. None is an RPC system; they are the bottom
// the ratios in the report are measured against.

func init() {
	register("floor-reflect", setupFloorReflect)
	register("floor-chan", setupFloorChan)
	register("floor-tcp", setupFloorTCP)
	register("floor-tcp-relay", setupFloorTCPRelay)
	register("floor-unix", setupFloorUnix, size16)
	registerStream("floor-chan", func(testing.TB) streamFunc { return floorChanStream })
	registerStream("floor-iterpull", func(testing.TB) streamFunc { return floorIterPullStream })
}

// The stream floors. Both carry the messages by value with no codec, no
// framing and no error beyond the end of the stream.

// floorChanStream: a goroutine started for the stream sends the messages,
// [msgSize]byte values, on a channel with a buffer of 256 and closes it;
// the caller receives them until it is closed. A producer running ahead of
// its consumer, as a network stream's sender does within its window.
func floorChanStream(_ context.Context, n int) (int, error) {
	ch := make(chan [msgSize]byte, 256)
	go func() {
		var msg [msgSize]byte
		for i := range n {
			fillMsg(msg[:], i)
			ch <- msg
		}
		close(ch)
	}()
	got := 0
	for msg := range ch {
		if !msgOK(msg[:], got) {
			for range ch { // let the sender finish
			}
			bad := msg // only here, so that msg stays off the heap
			return got, errBadMsg(got, bad[:])
		}
		got++
	}
	return got, nil
}

// floorIterPullStream: iter.Pull over a generator that fills one buffer for
// each message and yields it; the caller pulls until the generator ends.
// Each message costs a switch of coroutines there and back: the least a
// hand-off between a producer and a consumer that pulls costs.
func floorIterPullStream(_ context.Context, n int) (int, error) {
	next, stop := iter.Pull(func(yield func([]byte) bool) {
		msg := make([]byte, msgSize)
		for i := range n {
			fillMsg(msg, i)
			if !yield(msg) {
				return
			}
		}
	})
	defer stop()
	got := 0
	for msg, ok := next(); ok; msg, ok = next() {
		if !msgOK(msg, got) {
			return got, errBadMsg(got, msg)
		}
		got++
	}
	return got, nil
}

// setupFloorReflect: the method found once, as net/rpc's Register does,
// then a bare reflect.Value.Call per call with the receiver, args and reply,
// as net/rpc's service.call does. No codec, no goroutine, no context.
func setupFloorReflect(testing.TB, size) func() callFunc {
	rcvr := reflect.ValueOf(new(Arith))
	var fns [2]reflect.Value
	for m, name := range map[method]string{multiply: "Multiply", echo: "Echo"} {
		mt, ok := rcvr.Type().MethodByName(name)
		if !ok {
			panic("bench: Arith has no method " + name)
		}
		fns[m] = mt.Func
	}
	call := func(_ context.Context, m method, args, reply any) error {
		out := fns[m].Call([]reflect.Value{rcvr, reflect.ValueOf(args), reflect.ValueOf(reply)})
		if err := out[0].Interface(); err != nil {
			return err.(error)
		}
		return nil
	}
	return func() callFunc { return call }
}

// setupFloorChan: one server goroutine; a call sends the request value over
// an unbuffered channel and receives the reply value on the caller's own
// unbuffered channel (one per caller, made once, so concurrent callers get
// their own replies). The payload's bytes are not copied.
func setupFloorChan(tb testing.TB, _ size) func() callFunc {
	type request struct {
		m         method
		args      any
		mulReply  chan Product
		echoReply chan Payload
	}
	reqs := make(chan request)
	done := make(chan struct{})
	arith := new(Arith)
	go func() {
		defer close(done)
		for r := range reqs {
			switch r.m {
			case multiply:
				var p Product
				_ = arith.Multiply(r.args.(*Args), &p)
				r.mulReply <- p
			case echo:
				var p Payload
				_ = arith.Echo(r.args.(*Payload), &p)
				r.echoReply <- p
			}
		}
	}()
	tb.Cleanup(func() {
		close(reqs)
		<-done
	})
	return func() callFunc {
		mulReply, echoReply := make(chan Product), make(chan Payload)
		return func(_ context.Context, m method, args, reply any) error {
			reqs <- request{m, args, mulReply, echoReply}
			switch m {
			case multiply:
				*reply.(*Product) = <-mulReply
			case echo:
				*reply.(*Payload) = <-echoReply
			}
			return nil
		}
	}
}

// setupFloorTCP: raw bytes over loopback TCP, no framing, no codec. For 16B
// the caller writes A and B as 16 little-endian bytes and reads the 8-byte
// product; for a payload it writes the n bytes and reads n bytes back into a
// new slice (as decoding into a zeroed reply must), the server reading all n
// before it echoes them, as an RPC server does. The server knows n in
// advance: that is the framing left out.
func setupFloorTCP(tb testing.TB, sz size) func() callFunc {
	lb := newLoopback(tb, func(c net.Conn, wg *sync.WaitGroup) {
		wg.Go(func() { serveRawTCP(c, sz.n) })
	})
	return func() callFunc { return rawCaller(lb.dial(tb)) }
}

// setupFloorUnix: floor-tcp's bytes over a unix socket, the floor of the
// rows over one (unix_test.go).
func setupFloorUnix(tb testing.TB, sz size) func() callFunc {
	lb := newLoopbackOn(tb, "unix", socketPath(tb), func(c net.Conn, wg *sync.WaitGroup) {
		wg.Go(func() { serveRawTCP(c, sz.n) })
	})
	return func() callFunc { return rawCaller(lb.dial(tb)) }
}

// rawCaller makes floor-tcp's calls on c: the request's raw bytes written,
// the reply's read back (a payload into a new slice, as decoding into a
// zeroed reply must). floor-yamux makes the same calls on a yamux stream.
func rawCaller(c net.Conn) callFunc {
	buf := make([]byte, 16)
	return func(_ context.Context, m method, args, reply any) error {
		if err := writeRawRequest(c, buf, m, args); err != nil {
			return err
		}
		switch m {
		case multiply:
			if _, err := io.ReadFull(c, buf[:8]); err != nil {
				return err
			}
			reply.(*Product).P = int64(binary.LittleEndian.Uint64(buf[:8]))
		case echo:
			out := make([]byte, len(args.(*Payload).Data))
			if _, err := io.ReadFull(c, out); err != nil {
				return err
			}
			reply.(*Payload).Data = out
		}
		return nil
	}
}

// serveRawTCP answers setupFloorTCP's calls on c until c closes: n == 0
// multiplies, any other n echoes n bytes.
func serveRawTCP(c net.Conn, n int) {
	defer c.Close()
	if n == 0 {
		var in [16]byte
		var out [8]byte
		for {
			if _, err := io.ReadFull(c, in[:]); err != nil {
				return
			}
			a := int64(binary.LittleEndian.Uint64(in[0:8]))
			b := int64(binary.LittleEndian.Uint64(in[8:16]))
			binary.LittleEndian.PutUint64(out[:], uint64(a*b))
			if _, err := c.Write(out[:]); err != nil {
				return
			}
		}
	}
	buf := make([]byte, n)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// setupFloorTCPRelay: floor-tcp's bytes, but each end reads its socket on
// a goroutine of its own and hands each message over a channel to the
// goroutine that uses it — the caller waiting for its reply, a worker
// writing the answer — as any client that lets several callers share a
// connection, and any server that runs calls while it reads the next
// request, must. The difference from floor-tcp is what those two hand-offs
// cost: on a machine with more than one core, waking a goroutine on
// another core.
func setupFloorTCPRelay(tb testing.TB, sz size) func() callFunc {
	in := 16 // the request's bytes: two int64s, or the payload
	out := 8
	if sz.n > 0 {
		in, out = sz.n, sz.n
	}
	lb := newLoopback(tb, func(c net.Conn, wg *sync.WaitGroup) {
		reqs := make(chan []byte, 1)
		wg.Go(func() { // the worker
			res := make([]byte, out)
			for req := range reqs {
				if sz.n == 0 {
					a := int64(binary.LittleEndian.Uint64(req[0:8]))
					b := int64(binary.LittleEndian.Uint64(req[8:16]))
					binary.LittleEndian.PutUint64(res, uint64(a*b))
				} else {
					copy(res, req)
				}
				if _, err := c.Write(res); err != nil {
					return
				}
			}
		})
		wg.Go(func() { relay(c, in, reqs) }) // the reader
	})
	return func() callFunc {
		c := lb.dial(tb)
		replies := make(chan []byte)
		lb.wg.Go(func() { relay(c, out, replies) }) // the client's reader
		buf := make([]byte, 16)
		return func(_ context.Context, m method, args, reply any) error {
			if err := writeRawRequest(c, buf, m, args); err != nil {
				return err
			}
			r, ok := <-replies
			if !ok {
				return io.ErrUnexpectedEOF
			}
			switch m {
			case multiply:
				reply.(*Product).P = int64(binary.LittleEndian.Uint64(r))
			case echo:
				reply.(*Payload).Data = r
			}
			return nil
		}
	}
}

// writeRawRequest writes a tcp floor's request: A and B as 16
// little-endian bytes, encoded in buf, for multiply; the payload for echo.
func writeRawRequest(c net.Conn, buf []byte, m method, args any) error {
	if m == echo {
		_, err := c.Write(args.(*Payload).Data)
		return err
	}
	a := args.(*Args)
	binary.LittleEndian.PutUint64(buf[0:8], uint64(a.A))
	binary.LittleEndian.PutUint64(buf[8:16], uint64(a.B))
	_, err := c.Write(buf[:16])
	return err
}

// relay reads messages of n bytes from c and hands each on over to, a new
// slice each, until c fails; then it closes to.
func relay(c net.Conn, n int, to chan<- []byte) {
	defer close(to)
	for {
		b := make([]byte, n)
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		to <- b
	}
}

// loopback is a listener on loopback TCP for the tcp floors: serve is
// given each accepted connection and starts what answers it on wg; every
// connection, accepted or dialled, is closed and every goroutine waited
// for when the benchmark ends.
type loopback struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newLoopback(tb testing.TB, serve func(c net.Conn, wg *sync.WaitGroup)) *loopback {
	return newLoopbackOn(tb, "tcp", "127.0.0.1:0", serve)
}

// newLoopbackOn is newLoopback on network at addr: "unix" and a socket
// path for floor-unix.
func newLoopbackOn(tb testing.TB, network, addr string, serve func(c net.Conn, wg *sync.WaitGroup)) *loopback {
	ln, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	lb := &loopback{ln: ln}
	lb.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			lb.track(c)
			serve(c, &lb.wg)
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		lb.mu.Lock()
		for _, c := range lb.conns {
			c.Close()
		}
		lb.mu.Unlock()
		lb.wg.Wait()
	})
	return lb
}

func (lb *loopback) track(c net.Conn) {
	lb.mu.Lock()
	lb.conns = append(lb.conns, c)
	lb.mu.Unlock()
}

// dial connects to the listener; the connection is closed at the end.
func (lb *loopback) dial(tb testing.TB) net.Conn {
	c, err := net.Dial(lb.ln.Addr().Network(), lb.ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	lb.track(c)
	return c
}
