package dispatch

import (
	"runtime"
	"sync"
	"testing"
)

// funcTask is a task that calls f.
type funcTask func()

func (f funcTask) run() { f() }

// TestWorkerPool: a task runs on the worker that went idle last and starts
// none, a worker that finishes when enough are idle ends, stop ends the
// idle workers, a task given after stop still runs, and wait waits for
// every worker.
func TestWorkerPool(t *testing.T) {
	var p workerPool
	idle := func() []*worker {
		p.mu.Lock()
		defer p.mu.Unlock()
		return append([]*worker(nil), p.idle...)
	}
	untilIdle := func(n int) []*worker {
		for {
			if w := idle(); len(w) >= n {
				return w
			}
			runtime.Gosched()
		}
	}

	// Three tasks at once: three workers, which then go idle.
	const n = 3
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	for range n {
		p.work(funcTask(func() { started.Done(); release.Wait() }))
	}
	started.Wait()
	release.Done()
	before := untilIdle(n)

	// The next task goes to the top of the stack, which goes back there.
	ran := make(chan struct{})
	p.work(funcTask(func() { close(ran) }))
	<-ran
	after := untilIdle(n)
	if len(after) != n || after[n-1] != before[n-1] {
		t.Error("the task did not go to the worker that went idle last, or a worker was started")
	}

	// With maxIdleWorkers idle, a worker that finishes ends.
	p.mu.Lock()
	p.maxIdle = n
	p.mu.Unlock()
	ended := make(chan struct{})
	p.running.Add(1)
	go func() {
		p.serve(&worker{next: make(chan task, 1)}, funcTask(func() {}))
		close(ended)
	}()
	for waiting := true; waiting; {
		select {
		case <-ended:
			waiting = false
		default:
			if len(idle()) > n {
				t.Fatal("a worker went idle with maxIdleWorkers idle already")
			}
			runtime.Gosched()
		}
	}

	p.stop()
	if w := idle(); len(w) != 0 {
		t.Errorf("%d workers idle after stop", len(w))
	}
	late := make(chan struct{})
	p.work(funcTask(func() { close(late) }))
	<-late
	p.wait() // returns once all have ended, the late one too; goleak checks for the rest
	if w := idle(); len(w) != 0 {
		t.Errorf("%d workers idle after stop and a task", len(w))
	}
}
