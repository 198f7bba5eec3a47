package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// A message in a ring is a record: an 8-byte prefix — the header block's
// length and the body's, little-endian uint32s — then the header block, in
// WIRE.md's encoding (a uvarint length before each key and each value),
// then the body. A record may wrap at the ring's end, and one larger than
// the ring goes through in parts, the reader taking each as it comes.
const prefixLen = 8

// publishEvery is how often, in bytes, a writer publishes a large record
// as it goes, so that the reader copies one part while the writer writes
// the next rather than waiting for the whole.
const publishEvery = 256 << 10

// parker is what an end waits with, once spinning is done: the system's
// part of the waits (wake sockets on Linux; a stub in tests).
type parker interface {
	// check returns the error that ends a wait before it sleeps: the local
	// Close (transport.ErrClosed), a deadline passed (transport.ErrTimeout).
	check(data bool) error
	// peerGone reports whether the peer has gone (its socket ended).
	peerGone() bool
	// sleep waits to be woken: for data (the reader) or for room (the
	// writer), until a deadline, the local Close or the peer's going.
	sleep(data bool) error
	// wake wakes the peer's reader (data) or writer (room).
	wake(data bool)
}

// pipe is one end of a connection over its two rings: what it writes to
// out and reads from in. Its writing half is used by one goroutine at a
// time (the Socket's Send holds a lock), and its reading half too.
type pipe struct {
	out, in *ring
	p       parker
	max     int

	wpos, published uint64 // out's head as this end wrote and published it
	wbuf            []byte // the record's prefix and header block

	rpos, released uint64 // in's tail as this end read and released it
	rbuf           []byte // the header block read
	interns        frame.Interner

	// rspin and wspin are how long the reader spins for data and the
	// writer for room before sleeping.
	rspin, wspin spinBudget
}

// errMidFrame marks an error after part of a record was read or written:
// the ring is out of step, and the Socket is closed.
type errMidFrame struct{ err error }

func (e *errMidFrame) Error() string { return e.err.Error() }
func (e *errMidFrame) Unwrap() error { return e.err }

func midFrame(err error) error {
	var mf *errMidFrame
	if errors.As(err, &mf) {
		return err
	}
	return &errMidFrame{err}
}

// errGone ends a wait whose peer has gone, with nothing left to read or
// no one to read what is written.
var errGone = errors.New("shm: the peer closed the connection, or its process ended")

// awaitData waits until in holds bytes past rpos and returns how many;
// spinning for its budget (rspin), then parking.
func (e *pipe) awaitData() (int, error) {
	r := e.in
	var start time.Time
	slept := false
	for spin := 0; ; spin++ {
		n, err := r.avail(e.rpos)
		if err != nil || n > 0 {
			if slept {
				e.rspin.slept(time.Since(start))
			}
			return n, err
		}
		if spin&63 != 63 {
			continue
		}
		if start.IsZero() {
			start = time.Now()
			continue
		}
		if time.Since(start) < e.rspin.get() {
			runtime.Gosched()
			continue
		}
		if e.released != e.rpos { // a writer waiting for room must see it before this end sleeps
			e.released = e.rpos
			if r.release(e.rpos) {
				e.p.wake(false)
			}
		}
		if err := e.p.check(true); err != nil {
			return 0, err
		}
		gone := e.p.peerGone() // before the last look: what it sent is there by now
		r.readerParked.Store(1)
		if n, err := r.avail(e.rpos); err != nil || n > 0 {
			r.readerParked.Store(0)
			return n, err
		}
		if gone {
			r.readerParked.Store(0)
			return 0, errGone
		}
		if err := e.p.sleep(true); err != nil {
			r.readerParked.Store(0)
			return 0, err
		}
		slept = true
	}
}

// awaitRoom waits until out has room past wpos and returns how much;
// spinning for its budget (wspin), then parking.
func (e *pipe) awaitRoom() (int, error) {
	r := e.out
	var start time.Time
	slept := false
	for spin := 0; ; spin++ {
		n, err := r.free(e.wpos)
		if err != nil || n > 0 {
			if slept {
				e.wspin.slept(time.Since(start))
			}
			return n, err
		}
		if e.p.peerGone() {
			return 0, errGone
		}
		if spin&63 != 63 {
			continue
		}
		if start.IsZero() {
			start = time.Now()
			continue
		}
		if time.Since(start) < e.wspin.get() {
			runtime.Gosched()
			continue
		}
		if e.published != e.wpos {
			e.publish()
		}
		if err := e.p.check(false); err != nil {
			return 0, err
		}
		r.writerParked.Store(1)
		if n, err := r.free(e.wpos); err != nil || n > 0 {
			r.writerParked.Store(0)
			return n, err
		}
		if e.p.peerGone() {
			r.writerParked.Store(0)
			return 0, errGone
		}
		if err := e.p.sleep(false); err != nil {
			r.writerParked.Store(0)
			return 0, err
		}
		slept = true
	}
}

func (e *pipe) publish() {
	e.published = e.wpos
	if e.out.publish(e.wpos) {
		e.p.wake(true)
	}
}

// writeFrame writes m as one record, or fails with ErrFrameTooLarge
// having written nothing. An error once part of it is written is an
// *errMidFrame.
func (e *pipe) writeFrame(m *transport.Message) error {
	hl, err := frame.Check(m, e.max)
	if err != nil {
		return err
	}
	b := e.wbuf[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(hl))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Body)))
	for k, v := range m.Header {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	if cap(b) <= maxKeptHeaderBlock {
		e.wbuf = b
	}
	start := e.wpos
	if err := e.writeAll(b); err != nil {
		if e.wpos != start {
			return midFrame(err)
		}
		return err
	}
	if err := e.writeAll(m.Body); err != nil {
		return midFrame(err)
	}
	e.publish()
	return nil
}

// writeAll copies b into out, waiting for room as it must.
func (e *pipe) writeAll(b []byte) error {
	for len(b) > 0 {
		n, err := e.out.free(e.wpos)
		if err != nil {
			return err
		}
		if n == 0 {
			// Checked at each wait, not only at a sleep: a peer that frees
			// room a byte at a time, sooner than this end stops spinning,
			// would otherwise hold Send past its deadline and Close.
			if err := e.p.check(false); err != nil {
				return err
			}
			if n, err = e.awaitRoom(); err != nil {
				return err
			}
		}
		n = min(n, len(b), publishEvery)
		e.out.put(e.wpos, b[:n])
		e.wpos += uint64(n)
		b = b[n:]
		if e.wpos-e.published >= publishEvery {
			e.publish()
		}
	}
	return nil
}

// maxKeptHeaderBlock bounds the header buffers an end keeps between
// records; ordinary header blocks are a few hundred bytes.
const maxKeptHeaderBlock = 16 << 10

// waitFrame waits until a record has begun to arrive, taking none of it.
func (e *pipe) waitFrame() error {
	_, err := e.awaitData()
	return err
}

// readFrame reads the next record into m. An error before any of it
// arrived (a deadline, the peer gone) leaves the pipe as it was; one after
// is an *errMidFrame. Every length is read from the ring once, into a
// local, and checked against the frame limit before anything is sized by
// it: the peer may change the ring's bytes while they are read.
func (e *pipe) readFrame(m *transport.Message) error {
	if _, err := e.awaitData(); err != nil {
		if err == errGone {
			return io.EOF
		}
		return err
	}
	var p [prefixLen]byte
	if err := e.readAll(p[:]); err != nil {
		return midFrame(err)
	}
	hl := uint64(binary.LittleEndian.Uint32(p[0:]))
	bl := uint64(binary.LittleEndian.Uint32(p[4:]))
	if hl+bl > uint64(e.max) {
		return midFrame(frame.Announced(hl+bl, e.max))
	}
	if err := e.readHeader(m, int(hl)); err != nil {
		return midFrame(err)
	}
	if cap(m.Body) >= int(bl) {
		m.Body = m.Body[:bl]
	} else {
		m.Body = make([]byte, bl) // bounded by the frame limit, checked above
	}
	if err := e.readAll(m.Body); err != nil {
		return midFrame(err)
	}
	e.released = e.rpos
	if e.in.release(e.rpos) {
		e.p.wake(false)
	}
	return nil
}

// readAll copies len(b) bytes out of in, waiting for them as it must.
func (e *pipe) readAll(b []byte) error {
	for len(b) > 0 {
		n, err := e.in.avail(e.rpos)
		if err != nil {
			return err
		}
		if n == 0 {
			// Checked at each wait, not only at a sleep: a peer that sends
			// a record a byte at a time, sooner than this end stops
			// spinning, would otherwise hold Recv past its deadline and
			// Close.
			if err := e.p.check(true); err != nil {
				return err
			}
			n, err = e.awaitData()
			if err == errGone {
				return fmt.Errorf("shm: %w: the peer went part way through a message", io.ErrUnexpectedEOF)
			}
			if err != nil {
				return err
			}
		}
		n = min(n, len(b))
		e.in.get(e.rpos, b[:n])
		e.rpos += uint64(n)
		b = b[n:]
	}
	return nil
}

// readHeader reads a header block of hl bytes into m.Header, cleared or
// made as the Message contract says.
func (e *pipe) readHeader(m *transport.Message, hl int) error {
	if m.Header != nil {
		clear(m.Header)
	}
	if hl == 0 {
		return nil
	}
	if m.Header == nil {
		m.Header = make(map[string]string, 4)
	}
	if cap(e.rbuf) < hl {
		e.rbuf = make([]byte, hl) // bounded by the frame limit, checked by the caller
	}
	b := e.rbuf[:hl]
	if err := e.readAll(b); err != nil {
		return err
	}
	if cap(e.rbuf) > maxKeptHeaderBlock {
		e.rbuf = nil
	}
	// b is a local copy now: the peer can no longer change it.
	return e.interns.ParseHeader(m.Header, b)
}
