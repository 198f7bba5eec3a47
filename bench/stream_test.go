package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Streams. BenchmarkStream/<impl> makes one server-streaming call per op:
// the caller asks for streamMsgs messages and the server sends them, each
// msgSize bytes, the caller checking every one as it arrives. Message i is
// fillMsg's: i, then a value derived from i, both as little-endian uint64s,
// so that a message lost, repeated, reordered or overwritten is noticed.
//
// Every row is a func that receives one whole stream itself, so that the
// loop over messages is the implementation's own (a range over
// dispatch.CallStream, gRPC's RecvMsg until io.EOF, ...) with nothing
// between it and the check.

// streamMsgs is how many messages one op of BenchmarkStream carries.
const streamMsgs = 10_000

// msgSize is the size of each message of a stream.
const msgSize = 16

// streamFunc asks the server for a stream of n messages and receives it,
// checking each. It returns how many arrived and the first error: its
// implementation's, or errBadMsg's for a message that is not the one
// expected (it stops there).
type streamFunc func(ctx context.Context, n int) (int, error)

// streamSetup starts a server and returns the stream caller; cleanups it
// registers on tb stop everything it started and wait for it.
type streamSetup func(tb testing.TB) streamFunc

// streamOrder is the order of the stream rows in BenchmarkStream and in the
// report.
var streamOrder = []string{
	"zerodial-direct",
	"zerodial-copy",
	"zerodial-memory",
	"zerodial-tcp",
	"zerodial-mux",
	"zerodial-tcp-unix-proc",
	"zerodial-shm-proc",
	"grpc-tcp",
	"grpc-bufconn",
	"grpc-inproc",
	"grpc-unix-proc",
	"drpc-tcp",
	"zerodial-http-connect",
	"zerodial-http-grpc",
	"connect-native",
	"connect-native-grpc",
	"floor-chan",
	"floor-iterpull",
	"floor-yamux",
}

var (
	streamMu       sync.Mutex
	streamRegistry = map[string]streamSetup{}
)

// registerStream adds a stream row; each file registers its own in init.
func registerStream(name string, setup streamSetup) {
	streamMu.Lock()
	defer streamMu.Unlock()
	if _, dup := streamRegistry[name]; dup {
		panic("bench: stream row " + name + " registered twice")
	}
	streamRegistry[name] = setup
}

type streamImpl struct {
	name  string
	setup streamSetup
}

// streamImpls returns the registered stream rows in streamOrder.
func streamImpls() []streamImpl {
	streamMu.Lock()
	defer streamMu.Unlock()
	var out []streamImpl
	for _, name := range streamOrder {
		if s, ok := streamRegistry[name]; ok {
			out = append(out, streamImpl{name, s})
		}
	}
	return out
}

// fillMsg writes message i into m (msgSize bytes).
func fillMsg(m []byte, i int) {
	binary.LittleEndian.PutUint64(m[0:8], uint64(i))
	binary.LittleEndian.PutUint64(m[8:16], uint64(i)*0x9e3779b97f4a7c15)
}

// msgOK reports whether m is message i.
func msgOK(m []byte, i int) bool {
	return len(m) == msgSize &&
		binary.LittleEndian.Uint64(m[0:8]) == uint64(i) &&
		binary.LittleEndian.Uint64(m[8:16]) == uint64(i)*0x9e3779b97f4a7c15
}

// errBadMsg describes message got where message i was expected.
func errBadMsg(i int, got []byte) error {
	return fmt.Errorf("bench: message %d is %x, want %x", i, got, msgFor(i))
}

// msgFor returns a new message i.
func msgFor(i int) []byte {
	m := make([]byte, msgSize)
	fillMsg(m, i)
	return m
}

// BenchmarkStream times one server-streaming call of streamMsgs messages
// per op. Besides go test's figures it reports ns/msg and allocs/msg
// (allocations counted as -benchmem counts them, from the runtime's
// MemStats around the timed loop, divided by the messages).
func BenchmarkStream(b *testing.B) {
	for _, im := range streamImpls() {
		b.Run(im.name, func(b *testing.B) {
			recv := im.setup(b)
			ctx := context.Background()
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				n, err := recv(ctx, streamMsgs)
				if err != nil {
					b.Fatal(err)
				}
				if n != streamMsgs {
					b.Fatalf("%d messages, want %d", n, streamMsgs)
				}
			}
			runtime.ReadMemStats(&after)
			msgs := float64(b.N) * streamMsgs
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/msgs, "ns/msg")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/msgs, "allocs/msg")
		})
	}
}

// TestStreamsRegistered checks that every stream row in streamOrder exists.
func TestStreamsRegistered(t *testing.T) {
	for _, name := range streamOrder {
		if _, ok := streamRegistry[name]; !ok {
			t.Errorf("stream row %s is not registered", name)
		}
	}
	if len(streamRegistry) != len(streamOrder) {
		t.Errorf("%d stream rows registered, %d in streamOrder", len(streamRegistry), len(streamOrder))
	}
}

// TestStreams checks that every stream row delivers exactly the messages
// asked for, in order and intact (each streamFunc checks every message), on
// one caller several times over, for a few counts including none and a full
// op's, before anyone times it.
func TestStreams(t *testing.T) {
	ctx := context.Background()
	for _, im := range streamImpls() {
		t.Run(im.name, func(t *testing.T) {
			recv := im.setup(t)
			for _, n := range []int{streamMsgs, 0, 1, 3, streamMsgs} {
				got, err := recv(ctx, n)
				if err != nil {
					t.Fatalf("stream of %d: %v", n, err)
				}
				if got != n {
					t.Fatalf("stream of %d delivered %d messages", n, got)
				}
			}
		})
	}
}

// TestStreamCheck checks that the check every row makes notices a wrong
// message.
func TestStreamCheck(t *testing.T) {
	m := msgFor(7)
	if !msgOK(m, 7) {
		t.Fatal("message 7 is not message 7")
	}
	corrupted := msgFor(7)
	corrupted[12] ^= 1
	for name, bad := range map[string][]byte{
		"another":   msgFor(8),
		"short":     m[:msgSize-1],
		"corrupted": corrupted,
	} {
		if msgOK(bad, 7) {
			t.Errorf("%s message passes as message 7", name)
		}
	}
}
