package dispatch

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/zerodial/transport"
)

// regKey names a place a Server serves: an address within an address space
// (nil for the host's network; see transport.AddrSpacer).
type regKey struct {
	space any
	addr  string
}

// registry maps the addresses Servers of this process serve to those
// Servers. Reads are lock-free — every shortcut call does one — and writes
// copy the map.
type registry struct {
	mu sync.Mutex
	m  atomic.Pointer[map[regKey]*entry]
}

// entry is one listener's registration.
type entry struct {
	srv  *Server
	addr net.Addr // the listener's address, a shortcut handler's LocalAddr
	// limit is the listener's frame limit (transport.FrameLimiter), 0 if
	// it does not say: the shortcut applies it where the network would.
	limit int
	// closed tells whether the listener has closed, for listeners that can
	// (transport.ClosedReporter): the entry is dead from that moment,
	// before Serve notices and removes it.
	closed transport.ClosedReporter
	// wire is what the listener speaks (transport.WireReporter), zero if it
	// does not say. A client reaches the Server directly only if its own
	// transport's Wire is one the listener Accepts — so that a mux client
	// never gets in-process what a tcp listener, or a TLS one, would
	// refuse it on the network.
	wire transport.Wire
	// copyPeer and directPeer are where a shortcut call comes from, as its
	// handler's CallInfo says, in each mode.
	copyPeer, directPeer connInfo
}

// peer describes where a shortcut call taking path comes from: the calling
// process (ShortcutAddr), to the listener's address, with no TLS.
func (e *entry) peer(path Path) *connInfo {
	if path == PathShortcutDirect {
		return &e.directPeer
	}
	return &e.copyPeer
}

func (e *entry) live() bool { return e != nil && (e.closed == nil || !e.closed.Closed()) }

// reaches reports whether a client speaking w may call e's Server directly.
func (e *entry) reaches(w transport.Wire) bool { return e.live() && e.wire.Accepts(w) }

// wireOf returns what v speaks, or the zero Wire if it does not say.
func wireOf(v any) transport.Wire {
	if wr, ok := v.(transport.WireReporter); ok {
		return wr.Wire()
	}
	return transport.Wire{}
}

// shortcuts is the process-local registry, package state since the point
// is to find a Server of this process by address alone. It is the only
// process-wide state beside pools of buffers, which hold no channel: the
// quiet sweep is each Client's and each Server's (internal/sweep), and the
// pooled values that hold one are each connection's (pending) and each
// Server's (detachedCall), so that nothing made in one testing/synctest
// bubble is waited on in another.
var shortcuts registry

// lookup returns the live entry at k that a client speaking w reaches.
func (r *registry) lookup(k regKey, w transport.Wire) *entry {
	m := r.m.Load()
	if m == nil {
		return nil
	}
	if e := (*m)[k]; e.reaches(w) {
		return e
	}
	return nil
}

// found is a lookup remembered: valid while the registry's map is still
// the one it was found in (writes replace the map). e is nil when the entry
// there does not accept the client's Wire.
type found struct {
	in *map[regKey]*entry
	e  *entry
}

// lookupCached is lookup through a Client's memory of its last answer, which
// saves hashing the key and comparing Wires on every call.
func (r *registry) lookupCached(k regKey, w transport.Wire, cache *atomic.Pointer[found]) *entry {
	m := r.m.Load()
	f := cache.Load()
	if f == nil || f.in != m {
		var e *entry
		if m != nil {
			if e = (*m)[k]; e != nil && !e.wire.Accepts(w) {
				e = nil
			}
		}
		f = &found{in: m, e: e}
		cache.Store(f)
	}
	if f.e.live() {
		return f.e
	}
	return nil
}

// add registers srv under every form of l's address a client is likely to
// dial, and returns the function that removes exactly those entries. l's
// own address is l's: a listener bound to it now replaces any entry left by
// an earlier one whose Serve has not yet noticed it closed. A derived form
// (localhost:P, say) taken by another live listener is left to it.
func (r *registry) add(l transport.Listener, srv *Server) (remove func()) {
	e := &entry{srv: srv, addr: l.Addr(), wire: wireOf(l)}
	e.copyPeer = connInfo{srv: srv, path: PathShortcutCopy, local: e.addr, peer: ShortcutAddr}
	e.directPeer = connInfo{srv: srv, path: PathShortcutDirect, local: e.addr, peer: ShortcutAddr}
	if e.wire.Protocol == "" {
		// A listener that does not say what it speaks is reached by no
		// client (Wire.Accepts), so it gets no entry — which would only
		// hide the entry of a listener that does, at the same address (a
		// session over an accepted connection reports that listener's
		// address as its own).
		return func() {}
	}
	keys := serverKeys(l.Addr())
	if fl, ok := l.(transport.FrameLimiter); ok {
		e.limit = fl.MaxFrameSize()
	}
	if cr, ok := l.(transport.ClosedReporter); ok {
		e.closed = cr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.clone()
	for i, k := range keys {
		if i == 0 || !next[k].live() { // keys[0] is l's own address
			next[k] = e
		}
	}
	r.m.Store(&next)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		next := r.clone()
		for _, k := range keys {
			if next[k] == e {
				delete(next, k)
			}
		}
		r.m.Store(&next)
	}
}

func (r *registry) clone() map[regKey]*entry {
	next := make(map[regKey]*entry)
	if m := r.m.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	return next
}

func spaceOf(v any) any {
	if s, ok := v.(transport.AddrSpacer); ok {
		return s.AddrSpace()
	}
	return nil
}

// clientKey is the key a Client of tr dialling addr looks up.
func clientKey(tr transport.Transport, addr string) regKey {
	return regKey{space: spaceOf(tr), addr: addr}
}

// serverKeys lists the forms of a listener's address a local client is
// likely to dial and that reach the same listener over the network: the
// address itself; for a loopback IP also localhost:P; for an unspecified IP
// also :P, localhost:P and the loopback and unspecified literals of its
// family (both families for [::], which Go listens on dual-stack).
func serverKeys(a net.Addr) []regKey {
	space := spaceOf(a)
	keys := []regKey{{space, a.String()}}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil || space != nil {
		return keys
	}
	ip := ap.Addr()
	port := strconv.Itoa(int(ap.Port()))
	var forms []string
	switch {
	case ip.IsLoopback():
		forms = []string{"localhost:" + port}
	case ip.IsUnspecified() && ip.Is4():
		forms = []string{":" + port, "localhost:" + port, "127.0.0.1:" + port, "0.0.0.0:" + port}
	case ip.IsUnspecified():
		forms = []string{":" + port, "localhost:" + port, "127.0.0.1:" + port, "0.0.0.0:" + port, "[::1]:" + port, "[::]:" + port}
	}
	for _, f := range forms {
		if f != a.String() {
			keys = append(keys, regKey{space, f})
		}
	}
	return keys
}
