package unixsock

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
)

// peerCred reads LOCAL_PEERCRED: the peer's user, its groups (the first
// the effective one) and, since FreeBSD 13, its process id, as they were
// when the connection was made (0 for the pid before FreeBSD 13).
func peerCred(c *net.UnixConn) (transport.PeerCred, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return transport.PeerCred{}, false
	}
	var xu *unix.Xucred
	cerr := raw.Control(func(fd uintptr) {
		xu, err = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	})
	if cerr != nil || err != nil || xu.Ngroups < 1 {
		return transport.PeerCred{}, false
	}
	return transport.PeerCred{UID: int(xu.Uid), GID: int(xu.Groups[0]), PID: int(xucredPID(xu))}, true
}

// xucredPID reads struct xucred's cr_pid. It shares a union with a
// pointer, the struct's last field, which x/sys/unix leaves unnamed; a
// union's members start at its start, so the pid is the first 4 bytes of
// that field whatever the byte order.
func xucredPID(xu *unix.Xucred) int32 {
	off := unsafe.Sizeof(*xu) - unsafe.Sizeof(uintptr(0))
	return *(*int32)(unsafe.Add(unsafe.Pointer(xu), off))
}

// CredSupported says whether this system reports a unix socket peer's
// credentials.
const CredSupported = true
