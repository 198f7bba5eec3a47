// Package transporttest is the conformance suite for transport.Transport.
// Every transport in this module passes it, and a Transport written
// elsewhere can be held to the same contract by calling Run from its own
// tests, as golang.org/x/net/nettest.TestConn does for net.Conn:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
//			return mytransport.New(), "127.0.0.1:0"
//		})
//	}
//
// Each case runs on a fresh Transport, which Run closes when the case
// ends, and fails if it leaves a goroutine behind, so cases do not run in
// parallel. The Transport's Close is held to its contract too
// (TransportClose): the sockets it dialled end, on both ends, and its
// listeners serve on.
package transporttest
