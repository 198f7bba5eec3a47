// Package signal is a set-once event carrying an error, in the style of
// drpc's drpcsignal: the one lifecycle primitive behind every "closed",
// "draining" and "done" in dispatch.
//
// A Signal starts unset. The first Set sets it, with its error, for good;
// every later Set is refused and changes nothing, so the first reason given
// is the one every observer sees. It is observed three ways: IsSet, one
// atomic load, for hot paths that only ask whether; Err, the reason; and
// Signal, a channel closed once it is set, for a select.
//
// The zero Signal is ready to use and holds no channel: Signal makes one the
// first time it is asked for before the Signal is set, and after Set every
// Signal shares one closed channel, so a Signal nobody selects on costs no
// allocation for its whole life.
package signal

import (
	"sync"
	"sync/atomic"
)

// closed is the channel Signal returns once set if nobody asked before: one
// closed channel shared by every Signal, so that Set need not make one.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Signal is a set-once event with an error. The zero value is unset and
// ready to use. A Signal must not be copied after first use.
type Signal struct {
	set atomic.Bool
	ch  atomic.Value // chan struct{}, made by the first Signal before Set

	mu  sync.Mutex // serialises Set with the making of ch
	err error      // written once, before set is stored
}

// Set sets the Signal with err, if it is not set yet, and reports whether
// this call set it. Only the first call counts: a later one (whatever its
// error) returns false and leaves Err as the first call made it. Set never
// blocks but on the Signal's own short lock.
func (s *Signal) Set(err error) bool {
	if s.set.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set.Load() {
		return false
	}
	s.err = err
	s.set.Store(true)
	if c, _ := s.ch.Load().(chan struct{}); c != nil {
		close(c)
	}
	return true
}

// IsSet reports whether the Signal is set: one atomic load.
func (s *Signal) IsSet() bool { return s.set.Load() }

// Err is the error the Signal was set with, or nil while it is unset (or if
// it was set with nil).
func (s *Signal) Err() error {
	if !s.set.Load() {
		return nil
	}
	return s.err
}

// Signal returns a channel that is closed once the Signal is set (already
// closed if it is). Every call before Set returns the same channel.
func (s *Signal) Signal() <-chan struct{} {
	if c, _ := s.ch.Load().(chan struct{}); c != nil {
		return c
	}
	if s.set.Load() {
		return closed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, _ := s.ch.Load().(chan struct{}); c != nil {
		return c
	}
	if s.set.Load() {
		return closed
	}
	c := make(chan struct{})
	s.ch.Store(c)
	return c
}
