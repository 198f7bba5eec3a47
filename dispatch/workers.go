package dispatch

import "time"

// workerIdle is how long a worker goroutine waits for another call before
// it exits.
const workerIdle = 10 * time.Second

// task is what a worker does: read a connection (*serverConn) or run a call
// (*serverCall).
type task interface{ run() }

// work runs t on an idle worker, or on a new one. Workers outlive their
// tasks so that their stacks, grown by the codec and the handler, are grown
// once rather than for every call: a fresh goroutine per call, as net/rpc
// starts, spends more time copying its growing stack than the call takes.
// A task never waits for a busy worker.
func (s *Server) work(t task) {
	select {
	case s.tasks <- t:
	default:
		s.workers.Add(1)
		go s.worker(t)
	}
}

func (s *Server) worker(t task) {
	defer s.workers.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		t.run()
		idle.Reset(workerIdle)
		select {
		case t = <-s.tasks:
		case <-idle.C:
			return
		case <-s.quit:
			return
		}
	}
}
