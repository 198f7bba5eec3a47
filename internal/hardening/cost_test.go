package hardening

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
)

var costFull = flag.Bool("cost", false, "TestMisbehavingPeerCost: run every hostile peer at full size, measure how long the server holds it, and print the table")

// TestMisbehavingPeerCost measures what one hostile peer pins on a
// dispatch.Server with default options, over tcp and over mux, each over
// loopback TCP and over a unix socket: goroutines,
// live heap (after a collection) and file descriptors of the server's side,
// while the peer misbehaves. The peers write raw bytes (WIRE.md), doing
// what no zerodial Client would.
//
// Always, at small sizes, it checks that a well-behaved Client is served
// while the peer misbehaves, and that everything the peer pinned is
// released once it goes away. With -cost it runs the peers at full size,
// also measures how long the server holds each while it stays connected
// (up to 14 s: the timeouts that bound them are 10 s or more), and logs the
// table (go test ./internal/hardening -run Cost -cost -v).
func TestMisbehavingPeerCost(t *testing.T) {
	var rows []string
	for _, kind := range []string{"tcp", "mux", "tcp-unix", "mux-unix"} {
		for _, pc := range peerCases {
			if pc.only != "" && pc.only != strings.TrimSuffix(kind, "-unix") || pc.fullOnly && !*costFull {
				continue
			}
			t.Run(kind+"/"+pc.name, func(t *testing.T) {
				rows = append(rows, measurePeer(t, kind, pc))
			})
		}
	}
	if *costFull {
		t.Logf("what one peer pins on a default Server (server side; heap after GC):\n\n"+
			"| transport | peer | goroutines | heap | fds | held for |\n| --- | --- | ---: | ---: | ---: | --- |\n%s",
			strings.Join(rows, "\n"))
	}
}

// peerCase is one kind of hostile peer.
type peerCase struct {
	name     string // the subtest's
	desc     string // the table's
	only     string // the one transport it applies to, if any
	fullOnly bool   // run only with -cost
	// goroutines is how many goroutines the server may have at once
	// because of it, at most; reserved before the baseline (see
	// reserveGoroutines).
	goroutines func(full bool) int
	// misbehave connects to addr and does what the peer does; it returns
	// once the server has what the peer sends.
	misbehave func(p *rawPeer, full bool)
}

var peerCases = []peerCase{
	{
		name: "silent",
		desc: "silent: connects, sends nothing, not even the preface",
		misbehave: func(p *rawPeer, full bool) {
			p.dial()
		},
	},
	{
		name: "stalled",
		desc: "stalled: completes the preface, then sends nothing",
		misbehave: func(p *rawPeer, full bool) {
			p.handshake(p.dial())
		},
	},
	{
		name: "half-frame",
		desc: "half-frame: a frame's 10-byte prefix and 5 bytes, then nothing",
		misbehave: func(p *rawPeer, full bool) {
			f := appendFrame(nil, nil, make([]byte, 1<<20))
			p.stream(p.handshake(p.dial())).write(f[:15])
		},
	},
	{
		name:     "half-frame-4MiB",
		desc:     "half-frame: all of a 4 MiB frame but its last byte",
		fullOnly: true,
		misbehave: func(p *rawPeer, full bool) {
			f := appendFrame(nil, [][2]string{{"Service-Method", "Echo.Echo"}, {"Seq", "1"}}, make([]byte, transport.DefaultMaxFrameSize-64))
			p.stream(p.handshake(p.dial())).write(f[:len(f)-1])
		},
	},
	{
		name: "non-reading",
		desc: "non-reading: sends Echo calls, never reads",
		goroutines: func(full bool) int {
			if full {
				return dispatch.DefaultMaxCallsPerConn + 512
			}
			return 512
		},
		misbehave: func(p *rawPeer, full bool) {
			n, size := 200, 1<<10
			if full {
				n, size = dispatch.DefaultMaxCallsPerConn+2048, 64<<10
			}
			s := p.stream(p.handshake(p.dial()))
			s.noRead = true
			body := make([]byte, size)
			sent := 0
			for ; sent < n; sent++ {
				if !s.tryWrite(echoRequest(uint64(sent), body, nil)) {
					break // the server stopped reading: its calls are pinned
				}
			}
			p.note = fmt.Sprintf("%d calls of %d B sent", sent, size)
		},
	},
	{
		name: "stream-flooding",
		desc: "stream-flooding: opens streams as fast as it can",
		only: "mux",
		goroutines: func(full bool) int {
			return floodStreams(full) + 512
		},
		misbehave: func(p *rawPeer, full bool) {
			c := p.handshake(p.dial())
			n := floodStreams(full)
			opened := 0
			var batch []byte
			for id := uint32(1); opened < n; id += 2 {
				batch = appendYamux(batch, yamuxWindowUpdate, yamuxSYN, id, 0)
				opened++
				if len(batch) >= 12*256 || opened == n {
					_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
					if _, err := c.Write(batch); err != nil {
						break
					}
					batch = batch[:0]
				}
			}
			_ = c.SetWriteDeadline(time.Time{})
			p.note = fmt.Sprintf("%d streams opened", opened)
			p.settle = time.Second // the server takes its time accepting them
		},
	},
	{
		name: "big-then-idle",
		desc: "big-then-idle: one call with a large body (4 MiB at full size), then nothing",
		misbehave: func(p *rawPeer, full bool) {
			size := 256 << 10
			if full {
				size = transport.DefaultMaxFrameSize - 1024
			}
			// A method that does not exist: the server reads the body
			// and answers with a short error, which needs no window.
			f := appendFrame(nil, [][2]string{{"Service-Method", "No.Such"}, {"Seq", "1"}}, make([]byte, size))
			p.stream(p.handshake(p.dial())).write(f)
			p.note = fmt.Sprintf("%d KiB body", size>>10)
		},
	},
	{
		name: "bad-frames",
		desc: "bad-frames: a frame of an unknown version, one over the frame limit, one with a broken header block, each on a connection (mux: a stream) of its own",
		misbehave: func(p *rawPeer, full bool) {
			for _, f := range badFrames {
				s := p.stream(p.handshake(p.dial()))
				s.write(f)
				s.waitEnd()
			}
			p.note = fmt.Sprintf("%d connections, each ended by the server", len(badFrames))
			if p.mux() {
				p.note = fmt.Sprintf("%d streams, each ended by the server; their sessions stay", len(badFrames))
			}
		},
	},
	{
		name: "header-flooding",
		desc: "header-flooding: Echo calls with 1,022 metadata headers",
		misbehave: func(p *rawPeer, full bool) {
			calls, value := 2, 100
			if full {
				calls, value = 4, 4000
			}
			h := make([][2]string, 0, 1022)
			v := strings.Repeat("v", value)
			for i := range 1022 {
				h = append(h, [2]string{fmt.Sprintf("Md-h%04d", i), v})
			}
			s := p.stream(p.handshake(p.dial()))
			for i := range calls {
				s.write(echoRequest(uint64(i), nil, h))
			}
			p.note = fmt.Sprintf("%d calls, header blocks of %d KiB", calls, len(echoRequest(0, nil, h))>>10)
		},
	},
}

// badFrames are frames no zerodial peer sends (WIRE.md, section 1): a
// version the wire does not know, a body one byte over the default frame
// limit (its prefix alone: the server needs no more to refuse it), and a
// header block whose field length runs past the block.
var badFrames = [][]byte{
	{9, 0, 0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'},
	binary.BigEndian.AppendUint32([]byte{1, 0, 0, 0, 0, 0}, transport.DefaultMaxFrameSize+1),
	{1, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0x7f, 'a', 'b'},
}

// floodStreams is how many streams the stream-flooding peer opens. The race
// detector allows no more than 8,128 goroutines at once, and the server
// runs one for every stream.
func floodStreams(full bool) int {
	switch {
	case !full:
		return 300 // beyond the accept backlog of 256
	case raceEnabled:
		return 4000
	}
	return 20_000
}

// measurePeer serves the service on a fresh Server over kind, lets one
// hostile peer loose on it, and returns its row of the table.
func measurePeer(t *testing.T, kind string, pc peerCase) string {
	peak := 256
	if pc.goroutines != nil {
		peak = max(peak, pc.goroutines(*costFull))
	}
	if raceEnabled {
		peak = min(peak, 7000)
	}
	tr := newTransport(t, kind)
	srv, _ := newServer(t)
	addr := serve(t, srv, tr, listenAddr(t, kind))
	// Warm up the server's paths with a well-behaved call, so that the
	// baseline holds what any use leaves for good.
	wellBehaved(t, kind, addr)
	reserveGoroutines(peak)
	before := steady(t)

	p := &rawPeer{t: t, kind: kind, addr: addr, settle: 200 * time.Millisecond}
	defer p.close()
	pc.misbehave(p, *costFull)
	// The peer's effect reaches the server's goroutines in the background:
	// watch it a while and keep the most it costs.
	var most usage
	watch := p.settle
	if *costFull {
		watch = bound(watch)
	}
	for end := time.Now().Add(watch); ; {
		u := measure(t)
		most = usage{max(most.goroutines, u.goroutines), max(most.fds, u.fds), max(most.heap, u.heap)}
		if time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	goroutines := most.goroutines - before.goroutines
	fds := most.fds - before.fds - len(p.conns) // the peer's own are not the server's
	heap := int64(most.heap) - int64(before.heap)
	t.Logf("%s; server side: %+d goroutines, %+d fds, %+.1f KiB heap", p.note, goroutines, fds, float64(heap)/1024)

	// A hostile peer must not keep the server from serving others.
	wellBehaved(t, kind, addr)

	held := "—"
	if *costFull {
		held = heldFor(t, before, len(p.conns), 14*time.Second)
	}

	// Gone, the peer leaves nothing behind.
	p.close()
	settle(t, before)

	desc := pc.desc
	if p.note != "" {
		desc += " (" + p.note + ")"
	}
	return fmt.Sprintf("| %s | %s | %+d | %s | %+d | %s |", kind, desc, goroutines, kib(heap), fds, held)
}

// wellBehaved makes a call from a Client of its own, which it closes.
func wellBehaved(t *testing.T, kind, addr string) {
	t.Helper()
	t.Run("well-behaved", func(t *testing.T) {
		tr := newTransport(t, kind)
		c := dial(t, tr, addr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := echo(ctx, c, 1, []byte("well-behaved")); err != nil {
			t.Fatalf("a well-behaved Client is not served: %v", err)
		}
	})
}

// steady measures usage once the goroutines and descriptors that ended
// with the last Client (it returns before its readers are gone) are gone:
// two measurements alike in a row.
func steady(t *testing.T) usage {
	last := measure(t)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		u := measure(t)
		if u.goroutines == last.goroutines && u.fds == last.fds {
			return u
		}
		last = u
	}
	return last
}

// heldFor waits, up to limit, for the server to release what the peer,
// still connected, pinned, and says how long that took.
func heldFor(t *testing.T, before usage, peerFDs int, limit time.Duration) string {
	start := time.Now()
	for time.Since(start) < limit {
		u := measure(t)
		u.fds -= peerFDs
		if u.within(before) {
			return fmt.Sprintf("%.1f s", time.Since(start).Seconds())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("> %v", limit)
}

func kib(n int64) string {
	if n >= 1<<20 || n <= -1<<20 {
		return fmt.Sprintf("%+.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%+.1f KiB", float64(n)/1024)
}

// rawPeer is a hostile peer: raw connections (TCP, or a unix socket's) to a
// zerodial listener.
type rawPeer struct {
	t      *testing.T
	kind   string
	addr   string
	conns  []net.Conn
	note   string        // what it did, for the table
	settle time.Duration // how long the server takes to feel it
}

// mux reports whether the peer speaks to a mux listener.
func (p *rawPeer) mux() bool { return strings.TrimSuffix(p.kind, "-unix") == "mux" }

func (p *rawPeer) dial() net.Conn {
	p.t.Helper()
	network, addr := "tcp", p.addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", path
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		p.t.Fatal(err)
	}
	p.conns = append(p.conns, c)
	return c
}

func (p *rawPeer) close() {
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// handshake exchanges connection prefaces (WIRE.md, section 2) on c.
func (p *rawPeer) handshake(c net.Conn) net.Conn {
	p.t.Helper()
	proto := byte('t')
	if p.mux() {
		proto = 'm'
	}
	want := []byte{'Z', 'D', 'I', 'A', 'L', proto, 1, 0}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(want); err != nil {
		p.t.Fatal(err)
	}
	got := make([]byte, 8)
	if _, err := io.ReadFull(c, got); err != nil {
		p.t.Fatalf("reading the listener's preface: %v", err)
	}
	// This peer announces nothing, as one of an older version; the
	// listener announces S2 (WIRE.md, "Capabilities") and, told nothing,
	// sends it nothing compressed.
	want[7] = 0x01
	if string(got) != string(want) {
		p.t.Fatalf("the listener's preface is %q, want %q", got, want)
	}
	return c
}

// frameStream writes frames on a connection (tcp) or on one yamux stream
// of it (mux), which it opens.
type frameStream struct {
	p      *rawPeer
	c      net.Conn
	mux    bool
	id     uint32
	window int  // what the stream may still send (mux)
	noRead bool // never read the connection, not even window updates
}

// The yamux frame types and flags (WIRE.md, section 2, mux).
const (
	yamuxData         = 0
	yamuxWindowUpdate = 1
	yamuxPing         = 2
	yamuxGoAway       = 3
	yamuxSYN          = 1
	yamuxACK          = 2
	yamuxFIN          = 4
	yamuxRST          = 8
	yamuxWindow       = 256 << 10 // a stream's initial window
)

func appendYamux(b []byte, typ byte, flags uint16, id, length uint32) []byte {
	b = append(b, 0, typ)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint32(b, length)
}

func (p *rawPeer) stream(c net.Conn) *frameStream {
	s := &frameStream{p: p, c: c, mux: p.mux()}
	if s.mux {
		s.id, s.window = 1, yamuxWindow
		s.raw(appendYamux(nil, yamuxWindowUpdate, yamuxSYN, s.id, 0))
	}
	return s
}

func (s *frameStream) raw(b []byte) bool {
	_ = s.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, err := s.c.Write(b)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		s.p.t.Fatalf("writing to the server: %v", err)
	}
	return err == nil
}

// write writes b, failing the test if it cannot.
func (s *frameStream) write(b []byte) {
	if !s.tryWrite(b) {
		s.p.t.Fatalf("the server stopped reading")
	}
}

// tryWrite writes b, and reports false if the server stopped taking it:
// a write blocked for 2 s, or (mux, noRead) the stream's window is spent.
func (s *frameStream) tryWrite(b []byte) bool {
	if !s.mux {
		return s.raw(b)
	}
	for len(b) > 0 {
		for s.window == 0 {
			if s.noRead {
				return false
			}
			s.pump()
		}
		n := min(len(b), s.window, 32<<10)
		if !s.raw(append(appendYamux(nil, yamuxData, 0, s.id, uint32(n)), b[:n]...)) {
			return false
		}
		s.window -= n
		b = b[n:]
	}
	return true
}

// waitEnd waits for the server to end what the peer wrote on: the
// connection (tcp), or the stream (mux: a frame of it with FIN or RST),
// failing the test if it does not within 20 s, a hang guard.
func (s *frameStream) waitEnd() {
	t := s.p.t
	_ = s.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer s.c.SetReadDeadline(time.Time{})
	if !s.mux {
		_, err := io.Copy(io.Discard, s.c)
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("the server kept a connection that sent a bad frame: %v", err)
		}
		return
	}
	for {
		var h [12]byte
		if _, err := io.ReadFull(s.c, h[:]); err != nil {
			t.Fatalf("the server kept a stream that sent a bad frame: %v", err)
		}
		typ, flags := h[1], binary.BigEndian.Uint16(h[2:])
		id, length := binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
		if typ == yamuxData {
			if _, err := io.CopyN(io.Discard, s.c, int64(length)); err != nil {
				t.Fatal(err)
			}
		}
		if typ == yamuxPing && flags&yamuxSYN != 0 {
			s.raw(appendYamux(nil, yamuxPing, yamuxACK, 0, length))
		}
		if typ == yamuxGoAway || id == s.id && flags&(yamuxFIN|yamuxRST) != 0 {
			return
		}
	}
}

// pump reads one yamux frame from the server: window updates for the
// stream open its window, pings are answered, data is dropped.
func (s *frameStream) pump() {
	t := s.p.t
	_ = s.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer s.c.SetReadDeadline(time.Time{})
	var h [12]byte
	if _, err := io.ReadFull(s.c, h[:]); err != nil {
		t.Fatalf("waiting for the server's window update: %v", err)
	}
	typ, flags := h[1], binary.BigEndian.Uint16(h[2:])
	id, length := binary.BigEndian.Uint32(h[4:]), binary.BigEndian.Uint32(h[8:])
	switch typ {
	case yamuxData:
		if _, err := io.CopyN(io.Discard, s.c, int64(length)); err != nil {
			t.Fatal(err)
		}
	case yamuxWindowUpdate:
		if flags&yamuxRST != 0 {
			t.Fatalf("the server reset stream %d", id)
		}
		if id == s.id {
			s.window += int(length)
		}
	case yamuxPing:
		if flags&yamuxSYN != 0 {
			s.raw(appendYamux(nil, yamuxPing, yamuxACK, 0, length))
		}
	case yamuxGoAway:
		t.Fatalf("the server went away (code %d)", length)
	}
}

// appendFrame appends a frame (WIRE.md, section 1).
func appendFrame(b []byte, header [][2]string, body []byte) []byte {
	var block []byte
	for _, kv := range header {
		block = binary.AppendUvarint(block, uint64(len(kv[0])))
		block = append(block, kv[0]...)
		block = binary.AppendUvarint(block, uint64(len(kv[1])))
		block = append(block, kv[1]...)
	}
	b = append(b, 1, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(block)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(append(b, block...), body...)
}

// echoRequest is the frame of an Echo.Echo call (WIRE.md, section 3) with
// body, and extra headers.
func echoRequest(seq uint64, body []byte, extra [][2]string) []byte {
	args, err := codec.Msgpack.Marshal(&Msg{Seq: seq, Body: body})
	if err != nil {
		panic(err)
	}
	h := append([][2]string{{"Service-Method", "Echo.Echo"}, {"Seq", strconv.FormatUint(seq, 10)}}, extra...)
	return appendFrame(nil, h, args)
}
