// Package dialled keeps the open Sockets a Transport dialled, so that the
// Transport's Close can close them (transport.Transport.Close). memory's
// and tcp's Transports keep theirs in a Set, and so does the Transport of
// mux.Back; mux's own Transport closes its sessions instead.
package dialled

import (
	"io"
	"sync"
)

// Set is the open Sockets of one Transport. The zero value is an open,
// empty Set. It is touched when a Socket is dialled and when it is closed,
// never by Send or Recv.
type Set struct {
	mu     sync.Mutex
	closed bool
	open   map[io.Closer]struct{}
}

// Add records s, just dialled, and reports true. Once Close has been
// called it records nothing and reports false: the caller then closes s
// and fails its Dial with transport.ErrClosed.
func (d *Set) Add(s io.Closer) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if d.open == nil {
		d.open = make(map[io.Closer]struct{})
	}
	d.open[s] = struct{}{}
	return true
}

// Remove forgets s: its Close calls it, so that a Set holds only the
// Sockets still open.
func (d *Set) Remove(s io.Closer) {
	d.mu.Lock()
	delete(d.open, s)
	d.mu.Unlock()
}

// Closed reports whether Close has been called.
func (d *Set) Closed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// Close marks the Set closed, so that Add fails from now on, and closes
// every Socket in it. Later calls do nothing.
func (d *Set) Close() {
	d.mu.Lock()
	open := d.open
	d.closed, d.open = true, nil
	d.mu.Unlock()
	for s := range open {
		s.Close() // its Remove finds nothing to forget
	}
}
