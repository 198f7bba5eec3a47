package dispatch

import "time"

// workerIdle is how long a worker goroutine waits for another call before
// it exits.
const workerIdle = 10 * time.Second

// work runs call on an idle worker, or on a new one. Workers outlive their
// calls so that their stacks, grown by the codec and the handler, are grown
// once rather than for every call: a fresh goroutine per call, as net/rpc
// starts, spends more time copying its growing stack than the call takes.
// A call never waits for a busy worker.
func (s *Server) work(call *serverCall) {
	select {
	case s.calls <- call:
	default:
		s.workers.Add(1)
		go s.worker(call)
	}
}

func (s *Server) worker(call *serverCall) {
	defer s.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		call.run()
		idle.Reset(workerIdle)
		select {
		case call = <-s.calls:
		case <-idle.C:
			return
		case <-s.quit:
			return
		}
	}
}
