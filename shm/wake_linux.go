package shm

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
)

// An end that has spun long enough sleeps on one of its own eventfds,
// which the runtime's netpoller watches: a goroutine parks, no thread
// blocks, and the read and write deadlines are the files' own. The peer
// wakes it by writing to its copy of that eventfd, only when the parked
// flag in the ring says it sleeps (ring.publish, ring.release): while
// both ends are busy, a message costs no system call.
//
// The socket is the parker of its pipe.

var one = [8]byte{1} // an eventfd counts what is written, as a uint64 in the host's order (little-endian here)

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

// sleep reads this end's eventfd: the data one for the reader, the room
// one for the writer. It returns when the peer (or the watcher, on the
// peer's going) writes to it, when its deadline passes, or when Close
// closes it.
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

// wake writes to the peer's eventfd: its data one, to wake its reader, or
// its room one. The write does not block (the descriptor is non-blocking,
// and a counter that is full already wakes the peer).
func (s *socket) wake(data bool) {
	fd := s.e.peerRoom
	if data {
		fd = s.e.peerData
	}
	unix.Write(fd, one[:])
}

// wakeSelf wakes this end's own sleepers, for the watcher: the peer has
// gone, and they must look.
func (s *socket) wakeSelf() {
	s.e.data.Write(one[:])
	s.e.room.Write(one[:])
}
