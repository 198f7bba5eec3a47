package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/hashicorp/yamux"
)

// floor-yamux: floor-tcp's calls, and a stream of raw messages, on a bare
// yamux stream. Whatever an RPC system carries over yamux pays at least
// this: a yamux frame each way per message, yamux's receive loop handing the
// bytes to the stream's reader, its window updates. zerodial-mux,
// netrpc-yamux and msgpackrpc-yamux all run over yamux, so this, not
// floor-tcp, is the least they can cost. Both sessions use yamux's default
// configuration (yamuxConfig), as netrpc-yamux and msgpackrpc-yamux do.

func init() {
	register("floor-yamux", setupFloorYamux)
	registerStream("floor-yamux", setupFloorYamuxStream)
}

// setupFloorYamux: each caller gets a yamux stream of its own on one
// session, whose far end one goroutine reads and answers (serveRawTCP:
// read the request whole, write the answer). BenchmarkParallel's 64 callers
// thus share one connection, as the RPC rows' do, on 64 streams.
func setupFloorYamux(tb testing.TB, sz size) func() callFunc {
	open := yamuxFloorSession(tb, func(s net.Conn) { serveRawTCP(s, sz.n) })
	return func() callFunc { return rawCaller(open(tb)) }
}

// setupFloorYamuxStream: one yamux stream; a stream of n messages is the
// caller writing n (8 little-endian bytes) and the far end writing the n
// messages, the caller reading and checking each. The far end writes
// through a buffer of 256 messages (floor-chan's), flushed when full and at
// the end: a yamux frame per 256 messages, as a sender that coalesces what
// it queued while the previous write was out sends them at best. A yamux
// Write per message costs about ten times as much (a frame, a system call
// and two goroutine hand-offs each), which zerodial-mux, coalescing, does
// not pay.
func setupFloorYamuxStream(tb testing.TB) streamFunc {
	c := yamuxFloorSession(tb, serveYamuxFlow)(tb)
	var req [8]byte
	msg := make([]byte, msgSize)
	return func(_ context.Context, n int) (int, error) {
		binary.LittleEndian.PutUint64(req[:], uint64(n))
		if _, err := c.Write(req[:]); err != nil {
			return 0, err
		}
		for i := range n {
			if _, err := io.ReadFull(c, msg); err != nil {
				return i, err
			}
			if !msgOK(msg, i) {
				return i, errBadMsg(i, msg)
			}
		}
		return n, nil
	}
}

// serveYamuxFlow answers setupFloorYamuxStream's requests on s until it
// closes.
func serveYamuxFlow(s net.Conn) {
	defer s.Close()
	var req [8]byte
	msg := make([]byte, msgSize)
	w := bufio.NewWriterSize(s, 256*msgSize)
	for {
		if _, err := io.ReadFull(s, req[:]); err != nil {
			return
		}
		for i := range int(binary.LittleEndian.Uint64(req[:])) {
			fillMsg(msg, i)
			if _, err := w.Write(msg); err != nil {
				return
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// yamuxFloorSession connects a yamux client session to a server session
// over loopback TCP, and returns open, which opens a stream, has serve run
// on its far end and returns the near end. The cleanup closes both
// sessions, which ends every stream, and waits for every serve to return.
func yamuxFloorSession(tb testing.TB, serve func(net.Conn)) (open func(testing.TB) net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		acc <- accepted{c, err}
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	a := <-acc
	if err != nil || a.err != nil {
		if cc != nil {
			cc.Close()
		}
		if a.c != nil {
			a.c.Close()
		}
		tb.Fatal(err, a.err)
	}
	srv, err := yamux.Server(a.c, yamuxConfig())
	if err != nil {
		cc.Close()
		a.c.Close()
		tb.Fatal(err)
	}
	cli, err := yamux.Client(cc, yamuxConfig())
	if err != nil {
		cc.Close()
		srv.Close()
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		cli.Close()
		srv.Close()
		wg.Wait()
	})
	return func(tb testing.TB) net.Conn {
		c, err := cli.OpenStream()
		if err != nil {
			tb.Fatal(err)
		}
		s, err := srv.AcceptStream()
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() { serve(s) })
		return c
	}
}
