package frame

import "time"

// InterruptGrace is how long a write may still take once its caller's
// context has ended: the write deadline such a context sets (Flush's here,
// a dispatch Client's Send) is this far ahead, not in the past.
//
// A write cut part way through a frame spoils the stream, and the socket
// must close (over TLS, a write cut at all does), failing every call on
// the connection, not only the one whose context ended. A peer that reads
// takes a frame well within this; one that has stopped reading does not,
// and its socket closes as it did, this much later. So a context that
// ends while its write is under way — the common case of a cancel or a
// deadline, when the peer is well — costs its caller alone
// (dispatch.TestCancelInterruptsOnlyItsCaller): before, it closed the
// connection whenever it caught a write, about one run of gRPC's interop
// cases in ten. The price is that a caller blocked by a peer that stopped
// reading returns this much after its context ends.
const InterruptGrace = 100 * time.Millisecond

// interruptDeadline is the write deadline of a context that has ended.
func interruptDeadline() time.Time { return time.Now().Add(InterruptGrace) }
