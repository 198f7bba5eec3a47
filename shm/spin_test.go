package shm

import (
	"errors"
	"testing"
	"time"

	"github.com/zerodial/transport"
)

// sleepTimer is a parker whose first sleep records when it came and ends
// the wait: a peer that never writes.
type sleepTimer struct{ slept time.Time }

var errSlept = errors.New("sleepTimer: slept")

func (p *sleepTimer) check(bool) error { return nil }
func (p *sleepTimer) peerGone() bool   { return false }
func (p *sleepTimer) wake(bool)        {}
func (p *sleepTimer) sleep(bool) error {
	p.slept = time.Now()
	return errSlept
}

// TestSpinsBeforeSleeping: an end waiting for the peer looks at the ring
// for its spin budget (minSpin at first) before it sleeps, both as reader and as writer, so that a
// peer answering within that costs no system call at either end. (The
// spin once ended after 64 looks, well under a microsecond, and every
// message of a call slept and woke its peer: 2 sleeps a round trip.)
func TestSpinsBeforeSleeping(t *testing.T) {
	mem := make([]byte, mapBytes(minRingSize))
	in, out := newRing(mem, minRingSize), newRing(mem[ringBytes(minRingSize):], minRingSize)
	p := &sleepTimer{}
	e := &pipe{in: in, out: out, p: p, max: 1 << 10}

	start := time.Now()
	_, err := e.awaitData()
	if !errors.Is(err, errSlept) {
		t.Fatalf("awaitData: %v", err)
	}
	if spun := p.slept.Sub(start); spun < minSpin {
		t.Errorf("the reader slept after spinning %v, want at least %v", spun, minSpin)
	}

	e.wpos = minRingSize // the ring is full: the reader has read nothing
	start = time.Now()
	_, err = e.awaitRoom()
	if !errors.Is(err, errSlept) {
		t.Fatalf("awaitRoom: %v", err)
	}
	if spun := p.slept.Sub(start); spun < minSpin {
		t.Errorf("the writer slept after spinning %v, want at least %v", spun, minSpin)
	}
}

// TestSpinBudget: a wait woken sooner than maxSpin after its spin ended
// doubles the budget, up to maxSpin, where it stays; one that slept longer
// halves it, down to minSpin.
func TestSpinBudget(t *testing.T) {
	var b spinBudget
	if got := b.get(); got != minSpin {
		t.Fatalf("the zero budget is %v, want %v", got, minSpin)
	}
	want := minSpin
	for range 8 {
		b.slept(b.get() + time.Microsecond)
		want = min(2*want, maxSpin)
		if got := b.get(); got != want {
			t.Fatalf("after a short sleep: %v, want %v", got, want)
		}
	}
	b.slept(maxSpin + maxSpin/2) // spun 200 µs, then slept 100
	if got := b.get(); got != maxSpin {
		t.Fatalf("a short sleep at maxSpin: %v, want it kept at %v", got, maxSpin)
	}
	b.slept(time.Second)
	if got := b.get(); got != maxSpin/2 {
		t.Fatalf("after a long sleep: %v, want %v", got, maxSpin/2)
	}
	for range 8 {
		b.slept(time.Second)
	}
	if got := b.get(); got != minSpin {
		t.Fatalf("after long sleeps: %v, want %v", got, minSpin)
	}
}

// answerOnSleep is a parker whose peer writes a record as soon as this
// end sleeps: the reader is woken at once.
type answerOnSleep struct {
	peer   *pipe
	sleeps int
}

func (p *answerOnSleep) check(bool) error { return nil }
func (p *answerOnSleep) peerGone() bool   { return false }
func (p *answerOnSleep) wake(bool)        {}
func (p *answerOnSleep) sleep(bool) error {
	p.sleeps++
	return p.peer.writeFrame(&transport.Message{Body: []byte("hi")})
}

// TestPipeLearnsSpin: a reader's wait that slept teaches its budget, one
// caught by spinning does not. (What it learns depends on how long the
// wait took, which this machine's load decides; TestSpinBudget holds the
// rule.)
func TestPipeLearnsSpin(t *testing.T) {
	mem := make([]byte, mapBytes(minRingSize))
	a := newRing(mem, minRingSize)
	b := newRing(mem[ringBytes(minRingSize):], minRingSize)
	peer := &pipe{out: a, in: b, p: stubParker{}, max: 1 << 10}
	p := &answerOnSleep{peer: peer}
	e := &pipe{in: a, out: b, p: p, max: 1 << 10}

	var m transport.Message
	if err := e.readFrame(&m); err != nil || string(m.Body) != "hi" {
		t.Fatalf("readFrame: %q, %v", m.Body, err)
	}
	if p.sleeps != 1 || e.rspin.d == 0 {
		t.Fatalf("after a wait that slept %d times the budget is %v, want one sleep and a budget learned", p.sleeps, e.rspin.d)
	}

	e.rspin = spinBudget{}
	if err := peer.writeFrame(&transport.Message{Body: []byte("again")}); err != nil {
		t.Fatal(err)
	}
	if err := e.readFrame(&m); err != nil || string(m.Body) != "again" {
		t.Fatalf("readFrame: %q, %v", m.Body, err)
	}
	if p.sleeps != 1 || e.rspin.d != 0 {
		t.Fatalf("a wait with the record there slept (%d sleeps) or changed the budget (%v)", p.sleeps, e.rspin.d)
	}
}
