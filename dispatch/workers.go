package dispatch

import (
	"cmp"
	"runtime"
	"sync"
)

// task is what a worker does: read a connection (*serverConn, which runs
// the calls it reads itself or hands the reading on), or run a shortcut
// call's handler (*detachedCall) or a shortcut stream's (*memStream).
type task interface{ run() }

// maxIdleWorkers bounds the workers kept waiting for tasks; a worker that
// finishes a task when that many are idle already exits.
var maxIdleWorkers = 16 * runtime.GOMAXPROCS(0)

// workerPool is a Server's worker goroutines. Workers outlive their tasks
// so that their stacks, grown by the codec and the handler, are grown once
// rather than for every call: a fresh goroutine per call, as net/rpc
// starts, spends more time copying its growing stack than the call takes.
// A task never waits for a busy worker.
//
// An idle worker waits on a channel of its own, and the idle are a stack:
// a task goes to the worker that went idle last, whose stack is warm, by a
// plain send on a channel with room for it. A single channel that every
// idle worker selected on (with a second case for the Server's end) cost
// each hand-off a select's locking of both channels, twice, and gave the
// task to the worker idle longest; this serves BenchmarkCallDeadline
// (bench: zerodial-*-deadline), where a shortcut call hands its handler
// to a worker. TestWorkerPool tests it.
type workerPool struct {
	mu      sync.Mutex
	idle    []*worker // a stack: the last to go idle is on top
	stopped bool      // no worker goes idle any more
	maxIdle int       // if not 0, in place of maxIdleWorkers (tests)
	running sync.WaitGroup
}

// worker is one goroutine of a workerPool.
type worker struct {
	next chan task // room for one: the next task, or nil to end
}

// work runs t on an idle worker, or on a new one.
func (p *workerPool) work(t task) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.next <- t // never blocks: w took nothing since it went idle
		return
	}
	p.mu.Unlock()
	p.running.Add(1)
	go p.serve(&worker{next: make(chan task, 1)}, t)
}

// serve is a worker's life: t, then whatever it is given next, until the
// pool stops or has idle workers enough.
func (p *workerPool) serve(w *worker, t task) {
	defer p.running.Done()
	for t != nil {
		t.run()
		p.mu.Lock()
		if p.stopped || len(p.idle) >= cmp.Or(p.maxIdle, maxIdleWorkers) {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		t = <-w.next
	}
}

// stop ends the idle workers; a worker still running a task ends when the
// task does. A task given to work after stop still runs, on a worker that
// then ends.
func (p *workerPool) stop() {
	p.mu.Lock()
	p.stopped = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		w.next <- nil
	}
}

// wait returns once every worker has ended.
func (p *workerPool) wait() { p.running.Wait() }

// work runs t on one of the Server's workers.
func (s *Server) work(t task) { s.workers.work(t) }
