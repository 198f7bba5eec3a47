package transporttest_test

import (
	"crypto/tls"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

// broken is a Transport with every ability it claims, one of which breaks
// its contract: the Abilities case passes it, and the case named fails it
// with a message that says so.
type broken struct {
	name string
	kase string // the suite's case that fails it
	want string // what that case's failure says
	has  transporttest.Abilities
	addr string
	mk   func(t *testing.T) transport.Transport
	// end, if set, is the one end whose Sockets break the contract: the
	// case fails there (its subtest of that name) and passes the other.
	end string
}

var brokens = []broken{
	{
		// A wrapper that forgets AddrSpacer on both ends and claims
		// neither: its claims hold, but its addresses are not the host's,
		// so the in-process shortcut would call a Server the network does
		// not reach.
		name: "MemoryWithoutItsSpace", kase: "AddrSpace", want: "did not reach the Listener there",
		has: memoryHas &^ (transporttest.TransportAddrSpacer | transporttest.ListenerAddrSpacer), addr: "",
		mk: func(*testing.T) transport.Transport {
			m := memory.New()
			return &spaceless{Transport: m, FrameLimiter: m, WireReporter: m}
		},
	},
	{
		// Wires that say no TLS over TLS: the shortcut would let a plain
		// client call a TLS listener's Server.
		name: "WireDeniesTLS", kase: "TLSState", want: "its end's Wire",
		has: tcpHas, addr: "127.0.0.1:0",
		mk: func(t *testing.T) transport.Transport {
			cfg, err := mutualTLS()
			require.NoError(t, err)
			tr := tcp.New(tcp.WithTLS(cfg))
			return &plainWire{Transport: tr, FrameLimiter: tr}
		},
	},
	{
		name: "SendAsyncReorders", kase: "SendOrder", want: "out of order",
		has: tcpHas, addr: "127.0.0.1:0",
		mk: func(*testing.T) transport.Transport {
			return tcpSockets(func(s fullSocket) transport.Socket { return &reordering{fullSocket: s} })
		},
	},
	{
		// The accepted end alone reorders, as a Listener's wrapper that
		// broke SendAsync would: its own claim holds it to the contract.
		name: "AcceptedSendAsyncReorders", kase: "SendOrder", want: "out of order", end: "accepted",
		has: tcpHas, addr: "127.0.0.1:0",
		mk: func(*testing.T) transport.Transport {
			return tcpEnds(nil, func(s fullSocket) transport.Socket { return &reordering{fullSocket: s} })
		},
	},
	{
		name: "WaitFrameDoesNotWait", kase: "FrameWaiter", want: "WaitFrame with no message sent returned",
		has: tcpHas, addr: "127.0.0.1:0",
		mk: func(*testing.T) transport.Transport {
			return tcpSockets(func(s fullSocket) transport.Socket { return impatient{s} })
		},
	},
	{
		name: "BufferedAlways", kase: "Buffered", want: "Buffered before anything was sent",
		has: tcpHas, addr: "127.0.0.1:0",
		mk: func(*testing.T) transport.Transport {
			return tcpSockets(func(s fullSocket) transport.Socket { return alwaysBuffered{s} })
		},
	},
	{
		// The dialled end alone, where a client-side wrapper breaks it.
		name: "DialledBufferedAlways", kase: "Buffered", want: "Buffered before anything was sent", end: "dialled",
		has: tcpHas, addr: "127.0.0.1:0",
		mk: func(*testing.T) transport.Transport {
			return tcpEnds(func(s fullSocket) transport.Socket { return alwaysBuffered{s} }, nil)
		},
	},
	{
		name: "NeverClosed", kase: "ClosedReporter", want: "Closed after Close",
		has: memoryHas, addr: "",
		mk: func(*testing.T) transport.Transport {
			return memoryListening(func(l fullListener) transport.Listener { return neverClosed{l} })
		},
	},
	{
		name: "LimitOverstated", kase: "ListenerFrameLimit", want: "a message over the Listener's MaxFrameSize",
		has: memoryHas, addr: "",
		mk: func(*testing.T) transport.Transport {
			return memoryListening(func(l fullListener) transport.Listener { return halfLimit{l} })
		},
	},
}

// mutualTLS returns one configuration for both ends, as WithTLS takes it,
// the same for every Transport of the process, which trust each other.
var mutualTLS = sync.OnceValues(func() (*tls.Config, error) {
	server, client, err := testcert.Make(true)
	if err != nil {
		return nil, err
	}
	cfg := server.Clone()
	cfg.RootCAs = client.RootCAs
	return cfg, nil
})

// spaceless is a memory Transport that forgets its address space, on
// itself and on its Listeners' addresses.
type spaceless struct {
	transport.Transport
	transport.FrameLimiter
	transport.WireReporter
}

func (s *spaceless) Listen(addr string) (transport.Listener, error) {
	l, err := s.Transport.Listen(addr)
	if err != nil {
		return nil, err
	}
	return plainAddrListener{l.(fullListener)}, nil
}

// plainWire reports its Transport's Wire, and its Listeners', without TLS.
type plainWire struct {
	transport.Transport
	transport.FrameLimiter
}

func (p *plainWire) Wire() transport.Wire {
	w := p.Transport.(transport.WireReporter).Wire()
	w.TLS = false
	return w
}

func (p *plainWire) Listen(addr string) (transport.Listener, error) {
	l, err := p.Transport.Listen(addr)
	if err != nil {
		return nil, err
	}
	return plainWireListener{l.(fullListener)}, nil
}

type plainWireListener struct{ fullListener }

func (l plainWireListener) Wire() transport.Wire {
	w := l.fullListener.Wire()
	w.TLS = false
	return w
}

// reordering holds back the message SendAsync is given until the next
// one has gone.
type reordering struct {
	fullSocket
	mu   sync.Mutex
	held *transport.Message
}

func (s *reordering) SendAsync(m *transport.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = &transport.Message{Header: maps.Clone(m.Header), Body: slices.Clone(m.Body)}
	return nil
}

func (s *reordering) Queue(m *transport.Message) (bool, error) {
	if err := s.Send(m); err != nil {
		return false, err
	}
	return false, nil
}

func (s *reordering) Send(m *transport.Message) error {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	if err := s.fullSocket.Send(m); err != nil || held == nil {
		return err
	}
	return s.fullSocket.Send(held)
}

// impatient's WaitFrame returns at once.
type impatient struct{ fullSocket }

func (impatient) WaitFrame() error { return nil }

// alwaysBuffered's Buffered always says a message waits.
type alwaysBuffered struct{ fullSocket }

func (alwaysBuffered) Buffered() bool { return true }

// neverClosed's Closed always says open.
type neverClosed struct{ fullListener }

func (neverClosed) Closed() bool { return false }

// halfLimit reports half the limit its accepted Sockets enforce.
type halfLimit struct{ fullListener }

func (l halfLimit) MaxFrameSize() int { return l.fullListener.MaxFrameSize() / 2 }

// brokenEnv names the broken Transport TestRunFailsBrokenAbilities's child
// runs the suite against.
const brokenEnv = "TRANSPORTTEST_BROKEN_CHILD"

// TestRunFailsBrokenAbilities: for an ability whose contract a Transport
// breaks, while claiming exactly what it has, Run's Abilities case passes
// and the case of that ability fails, saying what broke — at the end that
// breaks it, when one end alone does. Each broken
// Transport runs in a child process (this test binary, run again), since
// a failed subtest would fail this test.
func TestRunFailsBrokenAbilities(t *testing.T) {
	if name := os.Getenv(brokenEnv); name != "" {
		for _, b := range brokens {
			if b.name == name {
				transporttest.Run(t, func(t *testing.T) (transport.Transport, string) { return b.mk(t), b.addr }, b.has)
			}
		}
		return
	}
	for _, b := range brokens {
		t.Run(b.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRunFailsBrokenAbilities$/^(Abilities|"+b.kase+")$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+b.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the suite passed %s:\n%s", b.name, out)
			assert.Contains(t, string(out), "--- PASS: TestRunFailsBrokenAbilities/Abilities", "its claims are what it has")
			assert.Contains(t, string(out), "--- FAIL: TestRunFailsBrokenAbilities/"+b.kase, "the case that must fail it")
			assert.Contains(t, string(out), b.want, "what the failure must say")
			if b.end != "" {
				other := map[string]string{"dialled": "accepted", "accepted": "dialled"}[b.end]
				assert.Contains(t, string(out), "--- FAIL: TestRunFailsBrokenAbilities/"+b.kase+"/"+b.end, "the end that breaks it")
				assert.Contains(t, string(out), "--- PASS: TestRunFailsBrokenAbilities/"+b.kase+"/"+other, "the end that keeps it")
			}
		})
	}
}
