package dispatch

import (
	"sync/atomic"

	"github.com/zerodial/transport/internal/sweep"
)

// readerState is what the goroutine reading a serverConn shares with the
// quiet sweep (internal/sweep, Server.quiet), lock-free: the call the
// reader runs on its own goroutine (runInline), the write of replies it
// holds back (hold, a replyHold), and whether the sweep watches the
// connection (swept). The reader sets the first two; the sweep acts on
// each at its first tick once it is sweep.QuietAfter old, handing the
// reading on to another worker or writing what is held; swept has the
// sweep watch the connection whenever either is set, at the cost of the
// sweep's lock only when it does not watch it already. With the call
// inline the reader records its method's inlinePace (pace) and whether
// that method is not known to be fast (urgent): the connection is hurried
// (sweep.Hurrier) while an urgent call runs inline or a write is held,
// and the sweep then ticks every QuietAfter; otherwise it may tick only
// every quietSlow, and its tick comes that much later.
//
// inline, the call run inline:
//
//	           beginInline(start, pace, urgent)
//	none or handedOn ──────────────────────▶ running since start
//	  ▲        ▲                                 │     │
//	  │        └── visit, start QuietAfter old ──┘     │
//	  │            (the reading is handed on)          │
//	  └─────────────── endInline(start): true ─────────┘
//
// endInline(start) reports false once the call was handed on: its
// goroutine must not read again. It reports false too when the next
// reader has begun an inline call of its own meanwhile, start being no
// longer there, and leaves that call alone.
//
// swept, whether the sweep watches the connection:
//
//	           beginInline or holdWrite: true, the reader Adds it
//	unwatched ──────────────────────────────────────────────────▶ watched
//	  ▲                                                              │
//	  └──────────── visit, no call inline and nothing held: done ────┘
//
// visit lets go of the connection, then looks again: a call begun or a
// write held meanwhile found it still watched and did not add it, so the
// visit takes it back and keeps watching; unless the reader took it
// first, and then the reader's Add, waiting for the sweep's lock, adds it
// again once this visit has dropped it. Either way neither a call inline
// nor a write held is left unwatched.
//
// hold (replyHold): held by holdWrite, taken once, by whoever writes it:
// a reader (hold.take) or visit once it is stale.
//
// Who moves it: beginInline, endInline and holdWrite, the reading
// goroutine (one at a time: the reading passes from one to the next);
// hold.take, any goroutine that has read, including one whose reading was
// handed on; visit, the sweep, under its lock (serverConn.Sweep), which
// also tells the method's pace, when it hands the reading on from its
// call, that the method is not known to be fast.
// TestReaderStateRace races them.
type readerState struct {
	// inline is when the call running on the reading goroutine began
	// (UnixNano, positive), inlineNone when none does, handedOn once the
	// sweep has given the reading to another worker.
	inline atomic.Int64
	// swept says the sweep watches the connection.
	swept atomic.Bool
	// urgent says the call run inline is of a method not known to be
	// fast (inlinePace): the sweep must look at it every QuietAfter.
	urgent atomic.Bool
	// pace is the inlinePace of the call run inline's method, which the
	// sweep tells when it hands the reading on from that call.
	pace atomic.Pointer[inlinePace]
	// hold is the write of replies the reader holds back.
	hold replyHold
}

// inline's states other than a call's start.
const (
	inlineNone = 0
	handedOn   = -1
)

// beginInline records that a call run inline began at start (positive),
// its method's pace, and whether it is urgent (its method is not known to
// be fast), and reports whether the caller must Add the connection to the
// sweep.
func (s *readerState) beginInline(start int64, pace *inlinePace, urgent bool) (add bool) {
	s.urgent.Store(urgent)
	s.pace.Store(pace)
	s.inline.Store(start)
	return s.swept.CompareAndSwap(false, true)
}

// hurried reports whether the sweep must look at the connection every
// QuietAfter (sweep.Hurrier): a call of a method not known to be fast
// runs inline, or a write is held. Otherwise it may wait for the sweep's
// slow period: the call running inline is of a method whose calls have
// all been short lately.
func (s *readerState) hurried() bool {
	return s.inline.Load() > 0 && s.urgent.Load() || s.hold.held()
}

// endInline records that the call begun at start has returned, and
// reports false if the reading was handed on meanwhile.
func (s *readerState) endInline(start int64) bool {
	return s.inline.CompareAndSwap(start, inlineNone)
}

// holdWrite holds the write of the replies queued back (replyHold.hold),
// and reports whether the caller must Add the connection to the sweep.
func (s *readerState) holdWrite(now int64) (add bool) {
	s.hold.hold(now)
	return s.swept.CompareAndSwap(false, true)
}

// visit is the sweep's, at now: it takes a hold QuietAfter old (write:
// the sweep must write it), hands the reading on from an inline call
// QuietAfter old (handOn: the sweep must give the reading to a worker),
// and reports whether the sweep is done with the connection.
func (s *readerState) visit(now int64) (write, handOn, done bool) {
	write = s.hold.takeStale(now)
	start := s.inline.Load()
	if start > 0 && now-start < int64(sweep.QuietAfter) {
		return write, false, false
	}
	handOn = start > 0 && s.inline.CompareAndSwap(start, handedOn)
	if handOn {
		// The call has run QuietAfter: its method is not known to be fast
		// from now on, and the calls of it other connections begin are
		// urgent, before this one has returned.
		if p := s.pace.Load(); p != nil {
			p.slow()
		}
	}
	// Let go. A call that began meanwhile, or a hold, found swept still
	// set and did not add the connection again: look once more after
	// clearing it.
	s.swept.Store(false)
	if (s.inline.Load() > 0 || s.hold.held()) && s.swept.CompareAndSwap(false, true) {
		return write, handOn, false
	}
	return write, handOn, true
}
