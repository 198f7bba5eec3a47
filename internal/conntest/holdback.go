package conntest

import (
	"net"
	"sync"
	"time"
)

// HoldBack is a client's connection that sends all of the first write made
// through it but its last hold bytes, and holds those back: a real net/rpc
// client over it (gob's, jsonrpc's, msgpackrpc's each write a small request
// in one Write) stops part way through its first request's body, its
// header whole — or, with a trickle period, sends the bytes held back one
// at a time, one each period, as a client on a slow or hostile link would.
// Later writes go as they are, after the bytes held back.
//
// Close closes the connection and stops the trickle, whose goroutine has
// returned when Close does.
type HoldBack struct {
	net.Conn
	hold    int
	trickle time.Duration

	mu      sync.Mutex // orders the writes: the first, the trickle's, later ones
	first   bool       // the first write is made
	held    []byte     // the bytes held back, not yet sent
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
}

// NewHoldBack returns conn holding back the last hold bytes of its first
// write; trickle is the period at which they go, one at a time, or 0 for
// never.
func NewHoldBack(conn net.Conn, hold int, trickle time.Duration) *HoldBack {
	return &HoldBack{Conn: conn, hold: hold, trickle: trickle, stop: make(chan struct{})}
}

// Write sends p, but the tail of the first write.
func (h *HoldBack) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first {
		if len(h.held) > 0 {
			// Not sent yet: what follows must wait for it.
			h.held = append(h.held, p...)
			return len(p), nil
		}
		return h.Conn.Write(p)
	}
	h.first = true
	cut := max(len(p)-h.hold, 0)
	h.held = append([]byte(nil), p[cut:]...)
	if _, err := h.Conn.Write(p[:cut]); err != nil {
		return 0, err
	}
	if h.trickle > 0 {
		h.wg.Go(h.trickleHeld)
	}
	return len(p), nil
}

// trickleHeld sends the bytes held back, one each period, until they are
// sent, a write fails, or Close.
func (h *HoldBack) trickleHeld() {
	t := time.NewTicker(h.trickle)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		if len(h.held) == 0 {
			h.mu.Unlock()
			return
		}
		_, err := h.Conn.Write(h.held[:1])
		h.held = h.held[1:]
		h.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Close closes the connection and stops the trickle.
func (h *HoldBack) Close() error {
	h.stopped.Do(func() { close(h.stop) })
	err := h.Conn.Close()
	h.wg.Wait()
	return err
}
