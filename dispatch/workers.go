package dispatch

import "runtime"

// task is what a worker does: read a connection (*serverConn, which runs
// the calls it reads itself or hands the reading on), or run a shortcut
// call's handler (*detachedCall) or a shortcut stream's (*memStream).
type task interface{ run() }

// maxIdleWorkers bounds the workers kept waiting for tasks; a worker that
// finishes a task when that many are idle already exits.
var maxIdleWorkers = int32(16 * runtime.GOMAXPROCS(0))

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
	for {
		t.run()
		if s.idle.Add(1) > maxIdleWorkers {
			s.idle.Add(-1)
			return
		}
		select {
		case t = <-s.tasks:
			s.idle.Add(-1)
		case <-s.quit.Signal():
			s.idle.Add(-1)
			return
		}
	}
}
