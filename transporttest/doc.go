// Package transporttest is the conformance suite for transport.Transport.
// Every transport in this module passes it, and a Transport written
// elsewhere can be held to the same contract by calling Run from its own
// tests, as golang.org/x/net/nettest.TestConn does for net.Conn:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
//			return mytransport.New(), "127.0.0.1:0"
//		}, transporttest.TransportFrameLimiter|transporttest.SocketAsyncSender)
//	}
//
// The last argument claims the optional interfaces (Abilities) the
// Transport, its Listeners, their addresses and its Sockets implement —
// every interface dispatch finds by a type assertion. The suite fails,
// naming the interface, when one claimed is missing or one present is not
// claimed, and holds each one claimed to its contract: the order of Send,
// SendAsync and Queue, a frame limit enforced, FrameWaiter's waits, TLS
// state over TLS, a closed Listener's Closed, Wires and address spaces
// that agree with what the network reaches. A wrapper of another
// Transport claims what it wraps has (AbilitiesOf), so that one it forgets
// to pass on — net/http's Flusher trap — fails its test rather than
// silently costing its users the in-process shortcut, shared writes or a
// caller's certificate. A Socket ability is claimed of both ends of a
// connection, unless the claim states the accepted end's apart with
// Accepted — as a wrapper of the dialling side alone, client-side
// middleware, does — and each end is held to its own claim.
// CheckAbilities runs the first check alone and returns its error.
//
// Each case runs on a fresh Transport, which Run closes when the case
// ends, and fails if it leaves a goroutine behind, so cases do not run in
// parallel. The Transport's Close is held to its contract too
// (TransportClose): the sockets it dialled end, on both ends, and its
// listeners serve on.
package transporttest
