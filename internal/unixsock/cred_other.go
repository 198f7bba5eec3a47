//go:build !linux && !darwin && !freebsd

package unixsock

import (
	"net"

	"github.com/zerodial/transport"
)

// peerCred reports nothing: only Linux's (SO_PEERCRED), macOS's and
// FreeBSD's (LOCAL_PEERCRED) credentials are read so far.
func peerCred(*net.UnixConn) (transport.PeerCred, bool) { return transport.PeerCred{}, false }

// CredSupported says whether this system reports a unix socket peer's
// credentials.
const CredSupported = false
