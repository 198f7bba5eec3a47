package grpczerodial

import (
	"context"

	"google.golang.org/grpc/peer"

	"github.com/zerodial/transport/dispatch"
)

// A call or stream given grpc.Peer learns where it went, as grpc-go's
// does: the Peer's Addr is the address of the Server it went to — the one
// the Client dialled, or for a Client of replicas the replica's — whose
// Network is the transport's ("tcp", "mux", "memory"), also when it took
// the shortcut to a Server of this process. A unary call's Peer is filled
// when it returns, a stream's once it is open (dispatch.Stream.CallInfo). A
// dispatch.Client does not report its connection's TLS state, so AuthInfo
// is nil, and LocalAddr too.

// call makes the call, through c.CallWithInfo when the call asked for its
// Peer, and fills the Peers.
func (co *callOpts) call(ctx context.Context, c *dispatch.Client, name string, req, out *body) error {
	if len(co.peer) == 0 {
		return c.Call(ctx, name, req, out)
	}
	var info dispatch.CallInfo
	err := c.CallWithInfo(ctx, name, req, out, &info)
	co.fillPeer(info)
	return err
}

// fillPeer fills the call's Peers with where it went.
func (co *callOpts) fillPeer(info dispatch.CallInfo) {
	for _, p := range co.peer {
		*p = peer.Peer{Addr: info.RemoteAddr}
	}
}
