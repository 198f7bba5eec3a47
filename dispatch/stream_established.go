package dispatch

// Established waits until the server has taken the stream — its handler
// runs — and returns nil, or returns why it has not: what the server
// refused the stream with (no such method, a method that is not streaming,
// shutting down, too many calls; the error Recv then yields too), ctx's
// end, Close, a failed connection. A stream taken and since ended was
// established. OpenStream returns without waiting, so that the first
// message can go with the opening; a caller that must know the stream is
// in place before it goes on — a watch subscribed before what it watches
// changes — waits here. It shares the waits of Send: it may be called
// before the first Send or between Sends, but not beside one.
func (s *Stream[In, Out]) Established() error { return established(s.end) }

// established waits until the server has taken the stream of end, or
// returns why not. A network stream learns it from the server's first
// window, which the server sends when it takes the stream (WIRE.md,
// Streams), and before which one message may go: it waits for it. On the
// shortcut the Server has taken or refused the stream when it opened.
func established(end callerEnd) error {
	for {
		switch e := end.(type) {
		case *endHooked: // interceptors, replicas
			end = e.callerEnd
		case *clientStream:
			return e.out.Announced(e)
		case failedEnd:
			return e.err
		default: // memStream
			return nil
		}
	}
}
