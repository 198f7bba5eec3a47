package dispatch

import (
	"context"
	"reflect"
	"sync/atomic"

	"github.com/zerodial/transport/internal/flow"
)

// openStream opens a stream on one of the replicas. A stream is tried on
// another replica only when it could not be opened at all (its replica
// could not be reached); once open, what becomes of it is its replica's.
func (s *replicaSet) openStream(ctx context.Context, name string, in, out reflect.Type, ready bool, info *CallInfo) (callerEnd, error) {
	var opened callerEnd
	err := s.try(ctx, false, func(r *replica) error {
		r.begin()
		info.RemoteAddr = r.c.remote
		end, err := r.c.openStream(ctx, name, in, out, ready, info)
		if f, ok := end.(failedEnd); ok && f.err == errShuttingDown {
			err = f.err // refused before any handler ran: go elsewhere
		}
		if err != nil {
			r.end()
			return err
		}
		opened = &endHooked{callerEnd: end, end: r.streamEnded()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return opened, nil
}

// streamEnded returns the hook that counts a stream out of r's calls in
// flight, once, however often its end is seen.
func (r *replica) streamEnded() func(error) {
	var once atomic.Bool
	return func(error) {
		if once.CompareAndSwap(false, true) {
			r.end()
		}
	}
}

// fastStream is Client.fastStream on the replica served by this process,
// when local-first would choose it: the stream then costs what an
// iterator costs, as it does on a Client of that one address.
func (s *replicaSet) fastStream(ctx context.Context, name string, in, out reflect.Type, args any, emit func(flow.Item) bool, fail func(error)) bool {
	if s.opts.localLimit == 0 {
		return false
	}
	r := s.pick(nil, s.clock.now())
	if r == nil || !r.isLocal() {
		return false
	}
	r.begin()
	defer r.end()
	return r.c.fastStream(ctx, name, in, out, args, emit, fail)
}
