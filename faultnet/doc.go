// Package faultnet injects faults into any transport.Transport — memory,
// tcp, mux, one of the user's — by rules a test states, each random choice
// drawn from one seed, so that a failing test can be replayed.
//
//	n := faultnet.New(faultnet.TestSeed(t))
//	tr := n.Wrap(memory.New(), "orders") // dials from the host "orders"
//	n.Add(faultnet.Rule{Addr: "inventory-0", Latency: 100 * time.Millisecond, Loss: 0.01})
//	n.Add(faultnet.Rule{Method: "Inventory.Reserve", Dir: faultnet.ToDialler, CutAfterFrames: 3})
//	n.Partition(faultnet.Partition{A: []string{"orders"}, B: []string{"inventory-0"}, For: 30 * time.Second})
//
// A Rule matches dials and frames by the dialling host, the dialled
// address, the way a frame goes (ToListener, ToDialler) and the method the
// frame belongs to, as the wire says it (WIRE.md: a request's and a
// response's Service-Method header; a stream's frames, which carry only
// their Seq, by the open frame that began it). It states latency (fixed,
// or drawn with Jitter), loss, duplication of requests and responses, a
// connection cut after N frames or bytes, refused or hanging dials, a slow
// reader and a bandwidth cap. A Partition cuts named sets of hosts and
// addresses apart and heals at a time.
//
// # Where faults are injected
//
// At the dialling end of each connection, both ways: a Transport's Dial
// wraps the socket it dials, and its Listen is the wrapped transport's.
// So it takes a Wrap on the client's side alone, and faults reach a
// server in another process, or one the test does not own, as well.
// A server's own dials (a service calling another) go through the Transport
// it dials with: Wrap that one too, under the server's host name.
//
// # Errors
//
// The faults fail what they fail as a network does, so that the code
// under test meets the errors it meets in production, and a library's own
// handling of them (dispatch's retries, ejection of replicas, ErrShutdown)
// is exercised, not bypassed: a refused dial fails with an error matching
// transport.ErrConnectionRefused (and syscall.ECONNREFUSED); a hanging one
// with its context's error; a cut connection with a *net.OpError matching
// syscall.ECONNRESET on the dialling end, while the listening end sees the
// connection end (io.EOF); deadlines with transport.ErrTimeout, a
// net.Error. A lost frame is simply never delivered, and the connection
// carries on.
//
// # The abilities kept and hidden
//
// A wrapper that forgets an optional interface of what it wraps silently
// takes an ability away (see package transport). A Transport keeps
// transport.FrameLimiter (the wrapped one's limit). The sockets it dials
// are transport.FrameWaiters and transport.AsyncSenders of their own
// (their Send queues the frame and returns, as a network socket's buffers
// take it), and pass transport.TLSReporter and transport.PeerCredReporter
// on; they are not BatchSenders, which would save nothing over a Send that
// queues, and do not report
// Unwritten, WaitWritten or Buffered, which dispatch asks only of a
// Server's sockets and the wrapped socket's would get wrong (they miss the
// frames queued in front of it, and those read ahead of Recv). Listeners,
// and the sockets they accept, are the wrapped transport's own, with every
// ability: the two ends differ, and faultnet's conformance test claims
// them apart (transporttest.Accepted).
//
// It deliberately hides transport.AddrSpacer and transport.WireReporter:
// with them, dispatch's shortcut (WithShortcut) would find a Server of the
// same process by its address and call it directly, and the calls would
// never cross the faults. Without them a Client over a faultnet Transport
// always uses its connections, shortcut or not.
//
// # Time and replay
//
// Every delay is a timer of the runtime's clock, so inside a
// testing/synctest bubble, over an in-process transport (memory), a
// 100 ms latency adds exactly 100 ms of the bubble's time per hop, and a
// 30 s partition takes no real time at all. Every random choice is drawn
// from the seed and from what the choice is about — the connection (the
// nth dial from a host to an address), the way, the frame's number on it,
// the rule — never from the order in which goroutines happened to choose,
// so the same seed injects the same faults into the same frames. Inside a
// bubble, where time is the bubble's, a test that makes its calls in the
// same order gets the same event log (Net.Events), exactly; outside, the
// real clock and the scheduler move the frames, and a replay is as close
// as they allow. TestSeed gives a test a seed, takes one from the
// environment (FAULTNET_SEED) to replay, and prints it when the test
// fails.
//
// docs/faults.md walks through a user's test of this kind
// (examples/faults: Orders riding out a 30 s partition of Inventory).
package faultnet
