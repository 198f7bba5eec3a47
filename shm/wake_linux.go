package shm

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
)

// An end that has spun long enough sleeps on one of its own wake sockets
// (meet_linux.go), which the runtime's netpoller watches: a goroutine
// parks, no thread blocks, and the read and write deadlines are the
// files' own. The peer wakes it by sending a byte to its end of that
// socketpair, only when the parked flag in the ring says it sleeps
// (ring.publish, ring.release): while both ends are busy, a message costs
// no system call. The end slept on is never passed to the peer, so the
// peer cannot make its read block; what this end writes to is shared with
// the peer, so every write is a send with MSG_DONTWAIT.
//
// The socket is the parker of its pipe.

var one = [1]byte{1} // a wake-up: any byte

// check is what ends a wait before sleeping: the local Close, a deadline
// passed.
func (s *socket) check(data bool) error {
	if s.closed.Load() {
		return s.closedErrOf(data)
	}
	d := &s.wd
	if data {
		d = &s.rd
	}
	if t := d.Load(); t != 0 && time.Now().UnixNano() >= t {
		return transport.ErrTimeout
	}
	return nil
}

// closedErrOf is the error of a wait that the socket's Close ended: the
// cause for a reader (closedErr), transport.ErrClosed for a writer.
func (s *socket) closedErrOf(data bool) error {
	if data {
		return s.closedErr()
	}
	return transport.ErrClosed
}

func (s *socket) peerGone() bool { return s.gone.Load() }

// sleep reads this end's wake socket: the data one for the reader, the
// room one for the writer. It returns when the peer (or the watcher, on
// the peer's going) writes to it, when its deadline passes, or when Close
// closes it. One read takes up to a buffer's worth of wake-ups; any left
// make a later sleep return at once, and its caller look again.
func (s *socket) sleep(data bool) error {
	f, buf := s.e.room, &s.wakeW
	if data {
		f, buf = s.e.data, &s.wakeR
	}
	_, err := f.Read(buf[:])
	switch {
	case err == nil:
		return nil
	case s.closed.Load():
		return s.closedErrOf(data)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return transport.ErrTimeout
	}
	return err
}

// wake wakes the peer's reader (data) or writer (room), sending a byte to
// its wake socket.
func (s *socket) wake(data bool) {
	fd := s.e.peerRoom
	if data {
		fd = s.e.peerData
	}
	poke(fd)
}

// wakeSelf wakes this end's own sleepers, for the watcher: the peer has
// gone, and they must look.
func (s *socket) wakeSelf() {
	poke(s.e.selfData)
	poke(s.e.selfRoom)
}

// poke sends a wake-up to fd, never blocking: the peer shares the
// descriptor and may have made it blocking, and MSG_DONTWAIT holds for the
// one call whatever its flags. A send that would block finds the
// receiver's buffer full of wake-ups it has not read, so it is awake
// already; one that fails otherwise (the peer closed its end) has no one
// to wake. MSG_NOSIGNAL: a closed peer is no SIGPIPE.
func poke(fd int) {
	unix.SendmsgN(fd, one[:], nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
}
