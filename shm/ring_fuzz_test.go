package shm

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/zerodial/transport"
)

// stubParker is a peer that has gone, for reading what a ring holds: a
// wait that finds nothing ends at once.
type stubParker struct{}

func (stubParker) check(bool) error { return nil }
func (stubParker) peerGone() bool   { return true }
func (stubParker) sleep(bool) error { return errors.New("stubParker: sleep") }
func (stubParker) wake(bool)        {}

// fuzzMax is the frame limit of the fuzzed reader: small, so that an
// allocation past it shows.
const fuzzMax = 1 << 10

// maxFuzzAlloc bounds what reading a fuzzed ring may allocate: 64
// messages at the limit, and their headers' strings and maps, with room.
const maxFuzzAlloc = 64 * 4 * fuzzMax

// record returns a well-formed record of m, as writeFrame writes it.
func record(m *transport.Message) []byte {
	var b []byte
	for k, v := range m.Header {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	hl := len(b)
	out := binary.LittleEndian.AppendUint32(nil, uint32(hl))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(m.Body)))
	return append(append(out, b...), m.Body...)
}

// FuzzRingReader holds the ring's reader to what a hostile peer may write:
// any bytes at any place in the ring, and any head. Whatever it holds, the
// reader returns messages within the frame limit or an error, never
// panics, never reads past the ring, and allocates no more than the
// messages it returns hold.
func FuzzRingReader(f *testing.F) {
	f.Add(uint64(0), uint64(0), []byte{})
	f.Add(uint64(0), uint64(len(record(&transport.Message{Body: []byte("hi")}))), record(&transport.Message{Body: []byte("hi")}))
	two := append(record(&transport.Message{Header: map[string]string{"k": "v"}, Body: []byte("one")}),
		record(&transport.Message{Body: make([]byte, 300)})...)
	f.Add(uint64(minRingSize-7), uint64(len(two)), two) // wraps at the ring's end
	f.Add(uint64(5), uint64(1<<40), two)                // a head far past the ring's size
	f.Add(uint64(9), ^uint64(0), two)                   // a head behind the tail
	huge := binary.LittleEndian.AppendUint32(nil, 0xffffffff)
	huge = binary.LittleEndian.AppendUint32(huge, 0xffffffff)
	f.Add(uint64(0), uint64(len(huge)), huge)                                            // lengths past the limit
	f.Add(uint64(0), uint64(12), []byte{4, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}) // a bad header field
	dup := record(&transport.Message{Header: map[string]string{"k": "v"}})
	dup = append(dup[:prefixLen:prefixLen], append(dup[prefixLen:], dup[prefixLen:]...)...)
	binary.LittleEndian.PutUint32(dup, uint32(len(dup)-prefixLen))
	f.Add(uint64(0), uint64(len(dup)), dup) // a duplicate key
	f.Fuzz(func(t *testing.T, start, n uint64, data []byte) {
		mem := make([]byte, ringBytes(minRingSize))
		r := newRing(mem, minRingSize)
		r.put(start, data[:min(len(data), minRingSize)])
		r.head.Store(start + n)
		r.tail.Store(start)
		e := &pipe{in: r, out: r, p: stubParker{}, max: fuzzMax, rpos: start, released: start}
		var m transport.Message
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer func() {
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > maxFuzzAlloc {
				t.Fatalf("reading the ring allocated %d bytes, past %d", got, maxFuzzAlloc)
			}
		}()
		for range 64 {
			err := e.readFrame(&m)
			if err != nil {
				return
			}
			size := len(m.Body)
			for k, v := range m.Header {
				size += len(k) + len(v)
			}
			if size > fuzzMax || cap(m.Body) > fuzzMax {
				t.Fatalf("a message of %d bytes (body capacity %d) past the limit %d", size, cap(m.Body), fuzzMax)
			}
			if e.rpos-start > n {
				t.Fatalf("read %d bytes of %d", e.rpos-start, n)
			}
		}
	})
}
