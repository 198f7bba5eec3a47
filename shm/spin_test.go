package shm

import (
	"errors"
	"testing"
	"time"
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
// for spinFor before it sleeps, both as reader and as writer, so that a
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
	if spun := p.slept.Sub(start); spun < spinFor {
		t.Errorf("the reader slept after spinning %v, want at least %v", spun, spinFor)
	}

	e.wpos = minRingSize // the ring is full: the reader has read nothing
	start = time.Now()
	_, err = e.awaitRoom()
	if !errors.Is(err, errSlept) {
		t.Fatalf("awaitRoom: %v", err)
	}
	if spun := p.slept.Sub(start); spun < spinFor {
		t.Errorf("the writer slept after spinning %v, want at least %v", spun, spinFor)
	}
}
