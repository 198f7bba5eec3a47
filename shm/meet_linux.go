package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/unixsock"
)

// unsupported is nil: Linux has what the transport needs.
var unsupported error

// The meeting, over the unix socket, of a connection's two ends (one
// message each way, each with file descriptors attached by SCM_RIGHTS):
//
//	dialler  → listener: "zdshm\x00\x01\x00", ring size (uint32 LE), 4 zero bytes;
//	                     the memfd of the mapping, the dialler's data and room wake sockets
//	listener → dialler:  "zdshm\x00ok" and 8 zero bytes; the listener's data and room wake sockets
//	                 or: "zdshm\x00no", a reason's length (uint32 LE), 4 zero bytes, the reason
//
// The dialler makes the memory, so a listener never maps more than the
// ring sizes it accepts; it seals the memfd's size, so that the peer
// cannot shrink it under this end's mapping (a read past a file's end is a
// SIGBUS, which would kill this process).
//
// A wake socket is one end of a unix socketpair (SOCK_STREAM): each end
// makes one pair per direction it sleeps in, keeps one end to sleep on
// (read through the netpoller) and passes the other to the peer, which
// writes a byte to it to wake this end. The end it sleeps on is never
// passed, so its open file description (its O_NONBLOCK flag) is this
// end's alone; the peer holds only the other end, whose flags and buffer
// it may change at will: every write to it is a send with MSG_DONTWAIT,
// which never blocks whatever the flags say, and a send that would block
// means the peer has unread wake-ups already. Each end checks that what
// the peer passed is a unix stream socket (SO_DOMAIN, SO_TYPE).
const (
	helloLen = 16
	hello    = "zdshm\x00\x01\x00"
	okReply  = "zdshm\x00ok"
	noReply  = "zdshm\x00no"
	// maxReason bounds the refusal a dialler reads.
	maxReason = 512
)

// seals are what the dialler's memfd must carry: neither end may change
// its size, nor unseal it.
const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// ends are a connection's resources at one end, once met.
type ends struct {
	mem                []byte   // the mapping of both rings
	data, room         *os.File // the ends of this end's wake sockets it sleeps on: its reader's, its writer's
	selfData, selfRoom int      // the other ends of them, passed to the peer; kept for the watcher to wake this end
	peerData, peerRoom int      // the peer's wake sockets, written to wake it
}

// release frees what e holds; for a meeting that failed part way.
func (e *ends) release() {
	if e.mem != nil {
		unix.Munmap(e.mem)
	}
	closeFiles(e.data, e.room)
	closeFDs(e.selfData, e.selfRoom, e.peerData, e.peerRoom)
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

func closeFDs(fds ...int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// wakeSockets makes an end's two wake sockets: a unix socketpair each,
// whose end this end sleeps on is non-blocking, so that the runtime's
// netpoller waits on it (os.NewFile): a sleeping end parks a goroutine,
// not a thread, and its deadlines are the files'.
func wakeSockets(e *ends) error {
	for _, w := range []struct {
		f    **os.File
		self *int
	}{{&e.data, &e.selfData}, {&e.room, &e.selfRoom}} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("shm: socketpair: %w", err)
		}
		*w.f = os.NewFile(uintptr(fds[0]), "shm-wake")
		*w.self = fds[1]
	}
	return nil
}

// meetDial is the dialler's side of the meeting over c: it makes and maps
// the memory, sends it, and takes the listener's wake sockets.
func meetDial(c *unixsock.Conn, ringSize int) (*ends, error) {
	size := mapBytes(ringSize)
	memfd, err := unix.MemfdCreate("zerodial-shm", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	defer unix.Close(memfd) // the mapping keeps the memory
	if err := unix.Ftruncate(memfd, int64(size)); err != nil {
		return nil, fmt.Errorf("shm: sizing the shared memory to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(memfd), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("shm: sealing the shared memory: %w", err)
	}
	e := &ends{selfData: -1, selfRoom: -1, peerData: -1, peerRoom: -1}
	if e.mem, err = unix.Mmap(memfd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("shm: mapping %d bytes: %w", size, err)
	}
	if err := wakeSockets(e); err != nil {
		e.release()
		return nil, err
	}
	var msg [helloLen]byte
	copy(msg[:], hello)
	binary.LittleEndian.PutUint32(msg[8:], uint32(ringSize))
	rights := unix.UnixRights(memfd, e.selfData, e.selfRoom)
	if _, _, err := c.WriteMsgUnix(msg[:], rights, nil); err != nil {
		e.release()
		return nil, fmt.Errorf("shm: sending the shared memory: %w", err)
	}
	fds, err := readMsg(c, msg[:], 2, true)
	if err == nil && string(msg[:8]) == noReply {
		err = refusal(c, msg[:])
	} else if err == nil && string(msg[:8]) != okReply {
		err = fmt.Errorf("%w: the peer is not a shm listener (it answered %q)", transport.ErrProtocol, msg[:8])
	}
	if err != nil {
		closeFDs(fds...)
		e.release()
		return nil, err
	}
	e.peerData, e.peerRoom = fds[0], fds[1]
	if err := checkWakeSockets(fds); err != nil {
		e.release()
		return nil, err
	}
	return e, nil
}

// refusal reads the reason a listener gave for refusing.
func refusal(c *unixsock.Conn, msg []byte) error {
	n := min(binary.LittleEndian.Uint32(msg[8:]), maxReason)
	reason := make([]byte, n)
	if _, err := io.ReadFull(c, reason); err != nil {
		return fmt.Errorf("%w: the listener refused the connection", transport.ErrProtocol)
	}
	return fmt.Errorf("%w: the listener refused the connection: %s", transport.ErrProtocol, reason)
}

// meetAccept is the listener's side of the meeting over c: it takes the
// dialler's memory, checks it, maps it, and sends its wake sockets. A
// dialler whose offer is refused is told why.
func meetAccept(c *unixsock.Conn) (e *ends, ringSize int, err error) {
	var msg [helloLen]byte
	fds, err := readMsg(c, msg[:], 3, false)
	if err != nil {
		closeFDs(fds...)
		return nil, 0, err
	}
	defer closeFDs(fds[0]) // the memfd: the mapping keeps the memory
	e = &ends{selfData: -1, selfRoom: -1, peerData: fds[1], peerRoom: fds[2]}
	if string(msg[:8]) != hello {
		e.release()
		return nil, 0, fmt.Errorf("%w: the peer is not a shm dialler (it sent %q)", transport.ErrProtocol, msg[:8])
	}
	ringSize = int(binary.LittleEndian.Uint32(msg[8:]))
	if err := mapOffer(e, fds, ringSize); err != nil {
		refuse(c, err.Error())
		e.release()
		return nil, 0, fmt.Errorf("%w: %v", transport.ErrProtocol, err)
	}
	if err := wakeSockets(e); err != nil {
		refuse(c, "the listener could not make its wake sockets")
		e.release()
		return nil, 0, err
	}
	var reply [helloLen]byte
	copy(reply[:], okReply)
	if _, _, err := c.WriteMsgUnix(reply[:], unix.UnixRights(e.selfData, e.selfRoom), nil); err != nil {
		e.release()
		return nil, 0, fmt.Errorf("shm: answering the dialler: %w", err)
	}
	return e, ringSize, nil
}

// mapOffer checks and maps what a dialler sent: a ring size this end
// accepts, a memfd of exactly the mapping's size whose size is sealed, and
// two unix stream sockets to wake the dialler with.
func mapOffer(e *ends, fds []int, ringSize int) error {
	if !validRingSize(ringSize) {
		return fmt.Errorf("ring size %d: must be a power of two between %d and %d", ringSize, minRingSize, maxRingSize)
	}
	size := mapBytes(ringSize)
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(size) {
		return fmt.Errorf("the shared memory is not a file of %d bytes", size)
	}
	got, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GET_SEALS, 0)
	if err != nil || got&seals != seals {
		return errors.New("the shared memory's size is not sealed (memfd with F_SEAL_SHRINK, F_SEAL_GROW and F_SEAL_SEAL)")
	}
	if err := checkWakeSockets(fds[1:]); err != nil {
		return err
	}
	if e.mem, err = unix.Mmap(fds[0], 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return fmt.Errorf("mapping %d bytes: %v", size, err)
	}
	return nil
}

// checkWakeSockets checks that the peer's descriptors are unix stream
// sockets, as its wake sockets must be. Their flags need no setting: the
// peer shares them, and every write to them is a send with MSG_DONTWAIT.
func checkWakeSockets(fds []int) error {
	for _, fd := range fds {
		domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			return fmt.Errorf("%w: the peer sent a descriptor that is not a socket where a wake socket was due (%v)", transport.ErrProtocol, err)
		}
		typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil || domain != unix.AF_UNIX || typ != unix.SOCK_STREAM {
			return fmt.Errorf("%w: the peer sent a socket of domain %d and type %d where a wake socket (a unix stream socket) was due",
				transport.ErrProtocol, domain, typ)
		}
	}
	return nil
}

// refuse tells the dialler why its offer was refused.
func refuse(c *unixsock.Conn, reason string) {
	reason = reason[:min(len(reason), maxReason)]
	var msg [helloLen]byte
	copy(msg[:], noReply)
	binary.LittleEndian.PutUint32(msg[8:], uint32(len(reason)))
	c.Write(append(msg[:], reason...))
}

// readMsg reads one meeting message into msg, with want descriptors
// attached: it returns every descriptor that came (for the caller to
// close), and an error unless exactly want did with a whole message, or
// (for the dialler, refusable) the listener's refusal came, with none.
func readMsg(c *unixsock.Conn, msg []byte, want int, refusable bool) ([]int, error) {
	oob := make([]byte, unix.CmsgSpace(4*(want+1))) // room for one more than want, to see too many
	n, oobn, flags, _, err := c.ReadMsgUnix(msg, oob)
	var fds []int
	if oobn > 0 {
		if cms, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, cm := range cms {
				if got, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	if err != nil {
		return fds, fmt.Errorf("shm: meeting the peer: %w", err)
	}
	if n == 0 {
		return fds, fmt.Errorf("%w: the peer closed the connection while meeting", transport.ErrProtocol)
	}
	if n < len(msg) {
		if _, err := io.ReadFull(c, msg[n:]); err != nil {
			return fds, fmt.Errorf("%w: the peer's meeting message ended early", transport.ErrProtocol)
		}
	}
	if refusable && string(msg[:8]) == noReply && len(fds) == 0 {
		return fds, nil // a refusal comes with no descriptors
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) != want {
		return fds, fmt.Errorf("%w: the peer sent %d file descriptors, want %d", transport.ErrProtocol, len(fds), want)
	}
	return fds, nil
}
