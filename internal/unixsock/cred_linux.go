package unixsock

import (
	"net"
	"syscall"

	"github.com/zerodial/transport"
)

// peerCred reads SO_PEERCRED: the peer's credentials when it connected
// (or, for a dialling end, when its listener bound).
func peerCred(c *net.UnixConn) (transport.PeerCred, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return transport.PeerCred{}, false
	}
	var uc *syscall.Ucred
	cerr := raw.Control(func(fd uintptr) {
		uc, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if cerr != nil || err != nil {
		return transport.PeerCred{}, false
	}
	return transport.PeerCred{UID: int(uc.Uid), GID: int(uc.Gid), PID: int(uc.Pid)}, true
}

// CredSupported says whether this system reports a unix socket peer's
// credentials.
const CredSupported = true
