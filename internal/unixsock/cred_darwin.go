package unixsock

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/zerodial/transport"
)

// peerCred reads LOCAL_PEERCRED (the peer's user, and its groups, the
// first the effective one) and LOCAL_PEERPID, as they were when the
// connection was made.
func peerCred(c *net.UnixConn) (transport.PeerCred, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return transport.PeerCred{}, false
	}
	var xu *unix.Xucred
	var pid int
	cerr := raw.Control(func(fd uintptr) {
		xu, err = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err == nil {
			pid, err = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	})
	if cerr != nil || err != nil || xu.Ngroups < 1 {
		return transport.PeerCred{}, false
	}
	return transport.PeerCred{UID: int(xu.Uid), GID: int(xu.Groups[0]), PID: pid}, true
}

// CredSupported says whether this system reports a unix socket peer's
// credentials.
const CredSupported = true
