package transporttest_test

import (
	"context"
	"net"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// The wrappers of this file each pass on every optional interface of the
// Transport they wrap but one, as a hand-written wrapper that forgot it
// would: they embed the interfaces they pass on, not the concrete type.
// memory's Transport and Listeners have every ability of their kind, and
// tcp's Sockets every ability of theirs, so each wrapper forgets exactly
// one.

const (
	// memoryHas is what memory's Transport, Listeners and Sockets have.
	memoryHas = transporttest.TransportFrameLimiter | transporttest.TransportAddrSpacer | transporttest.TransportWireReporter |
		transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter |
		transporttest.ListenerAddrSpacer | transporttest.SocketFrameWaiter
	// tcpHas is what tcp's have.
	tcpHas = transporttest.TransportFrameLimiter | transporttest.TransportWireReporter |
		transporttest.ListenerFrameLimiter | transporttest.ListenerClosedReporter | transporttest.ListenerWireReporter |
		transporttest.AllSocketAbilities
)

// forgetful is one wrapper that forgets one ability: it makes the wrapper
// around a fresh inner Transport, which claims has.
type forgetful struct {
	forgets transporttest.Abilities
	iface   string // the interface the failure must name
	has     transporttest.Abilities
	addr    string
	wrap    func() transport.Transport
}

var forgetfuls = []forgetful{
	{transporttest.TransportFrameLimiter, "transport.FrameLimiter", memoryHas, "", func() transport.Transport {
		m := memory.New()
		return struct {
			transport.Transport
			transport.AddrSpacer
			transport.WireReporter
		}{m, m, m}
	}},
	{transporttest.TransportAddrSpacer, "transport.AddrSpacer", memoryHas, "", func() transport.Transport {
		m := memory.New()
		return struct {
			transport.Transport
			transport.FrameLimiter
			transport.WireReporter
		}{m, m, m}
	}},
	{transporttest.TransportWireReporter, "transport.WireReporter", memoryHas, "", func() transport.Transport {
		m := memory.New()
		return struct {
			transport.Transport
			transport.FrameLimiter
			transport.AddrSpacer
		}{m, m, m}
	}},
	{transporttest.ListenerFrameLimiter, "transport.FrameLimiter", memoryHas, "", func() transport.Transport {
		return memoryListening(func(l fullListener) transport.Listener {
			return struct {
				transport.Listener
				transport.ClosedReporter
				transport.WireReporter
			}{l, l, l}
		})
	}},
	{transporttest.ListenerClosedReporter, "transport.ClosedReporter", memoryHas, "", func() transport.Transport {
		return memoryListening(func(l fullListener) transport.Listener {
			return struct {
				transport.Listener
				transport.FrameLimiter
				transport.WireReporter
			}{l, l, l}
		})
	}},
	{transporttest.ListenerWireReporter, "transport.WireReporter", memoryHas, "", func() transport.Transport {
		return memoryListening(func(l fullListener) transport.Listener {
			return struct {
				transport.Listener
				transport.FrameLimiter
				transport.ClosedReporter
			}{l, l, l}
		})
	}},
	{transporttest.ListenerAddrSpacer, "transport.AddrSpacer", memoryHas, "", func() transport.Transport {
		return memoryListening(func(l fullListener) transport.Listener { return plainAddrListener{l} })
	}},
	{transporttest.SocketAsyncSender, "transport.AsyncSender", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.BatchSender
				transport.FrameWaiter
				transport.TLSReporter
				unwritten
				waitWritten
				buffered
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketBatchSender, "transport.BatchSender", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.FrameWaiter
				transport.TLSReporter
				unwritten
				waitWritten
				buffered
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketFrameWaiter, "transport.FrameWaiter", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.BatchSender
				transport.TLSReporter
				unwritten
				waitWritten
				buffered
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketTLSReporter, "transport.TLSReporter", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.BatchSender
				transport.FrameWaiter
				unwritten
				waitWritten
				buffered
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketUnwritten, "interface{ Unwritten() int64 }", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.BatchSender
				transport.FrameWaiter
				transport.TLSReporter
				waitWritten
				buffered
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketWaitWritten, "interface{ WaitWritten(context.Context) error }", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.BatchSender
				transport.FrameWaiter
				transport.TLSReporter
				unwritten
				buffered
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketBuffered, "interface{ Buffered() bool }", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.BatchSender
				transport.FrameWaiter
				transport.TLSReporter
				unwritten
				waitWritten
				transport.PeerCredReporter
			}{s, s, s, s, s, s, s, s}
		})
	}},
	{transporttest.SocketPeerCredReporter, "transport.PeerCredReporter", tcpHas, "127.0.0.1:0", func() transport.Transport {
		return tcpSockets(func(s fullSocket) transport.Socket {
			return struct {
				transport.Socket
				transport.AsyncSender
				transport.BatchSender
				transport.FrameWaiter
				transport.TLSReporter
				unwritten
				waitWritten
				buffered
			}{s, s, s, s, s, s, s, s}
		})
	}},
}

// The abilities dispatch finds with interfaces of its own.
type (
	unwritten   = interface{ Unwritten() int64 }
	waitWritten = interface {
		WaitWritten(ctx context.Context) error
	}
	buffered = interface{ Buffered() bool }
)

// memoryListening wraps a memory Transport, passing on its abilities,
// and its Listeners with wrap.
func memoryListening(wrap func(fullListener) transport.Listener) transport.Transport {
	m := memory.New()
	return &listening{Transport: m, FrameLimiter: m, AddrSpacer: m, WireReporter: m, wrap: wrap}
}

// listening is a memory Transport whose Listeners are wrapped.
type listening struct {
	transport.Transport
	transport.FrameLimiter
	transport.AddrSpacer
	transport.WireReporter
	wrap func(fullListener) transport.Listener
}

func (t *listening) Listen(addr string) (transport.Listener, error) {
	l, err := t.Transport.Listen(addr)
	if err != nil {
		return nil, err
	}
	return t.wrap(l.(fullListener)), nil
}

// fullListener is a Listener with every ability a Listener may have.
type fullListener interface {
	transport.Listener
	transport.FrameLimiter
	transport.ClosedReporter
	transport.WireReporter
}

// plainAddrListener passes on every ability of its Listener, and its
// address as a plain net.Addr, which forgets the address's AddrSpacer.
type plainAddrListener struct{ fullListener }

func (l plainAddrListener) Addr() net.Addr { return plainAddr{l.fullListener.Addr()} }

type plainAddr struct{ a net.Addr }

func (a plainAddr) Network() string { return a.a.Network() }
func (a plainAddr) String() string  { return a.a.String() }

// tcpSockets wraps a tcp Transport, passing on the abilities of its
// Transport and Listeners, and its Sockets, dialled and accepted, with
// wrap.
func tcpSockets(wrap func(fullSocket) transport.Socket) transport.Transport {
	return tcpEnds(wrap, wrap)
}

// tcpEnds wraps a tcp Transport, passing on the abilities of its
// Transport and Listeners, its dialled Sockets with dialled and its
// accepted ones with accepted; a nil one leaves its end's as they are.
func tcpEnds(dialled, accepted func(fullSocket) transport.Socket) transport.Transport {
	t := tcp.New()
	return &socketing{Transport: t, FrameLimiter: t, WireReporter: t, dialled: dialled, accepted: accepted}
}

// socketing is a tcp Transport whose Sockets are wrapped.
type socketing struct {
	transport.Transport
	transport.FrameLimiter
	transport.WireReporter
	dialled, accepted func(fullSocket) transport.Socket
}

func (t *socketing) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	s, err := t.Transport.Dial(ctx, addr)
	if err != nil || t.dialled == nil {
		return s, err
	}
	return t.dialled(s.(fullSocket)), nil
}

func (t *socketing) Listen(addr string) (transport.Listener, error) {
	l, err := t.Transport.Listen(addr)
	if err != nil || t.accepted == nil {
		return l, err
	}
	return &acceptWrapping{fullListener: l.(fullListener), wrap: t.accepted}, nil
}

// acceptWrapping passes on every ability of its Listener, and wraps the
// Sockets it accepts.
type acceptWrapping struct {
	fullListener
	wrap func(fullSocket) transport.Socket
}

func (l *acceptWrapping) Accept() (transport.Socket, error) {
	s, err := l.fullListener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(s.(fullSocket)), nil
}

// fullSocket is a Socket with every ability a Socket may have.
type fullSocket interface {
	transport.Socket
	transport.AsyncSender
	transport.BatchSender
	transport.FrameWaiter
	transport.TLSReporter
	unwritten
	waitWritten
	buffered
	transport.PeerCredReporter
}
