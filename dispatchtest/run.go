package dispatchtest

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// waitLong bounds every wait for something that must happen: a hang
// guard, generous since the machine may be loaded; only a failing case
// waits that long.
const waitLong = 20 * time.Second

// testCase is one case of the suite.
type testCase struct {
	name string
	// stream: the case opens streams (Difference.Streams affects it).
	stream bool
	// timed: the case waits on time (a deadline, a handler that sleeps);
	// it runs in a synctest bubble on a path that can (Binding.Bubble).
	timed bool
	run   func(t *testing.T, e *env) Outcome
	// check asserts what the outcome must be, beyond being the reference
	// path's.
	check func(t *testing.T, o Outcome)
}

// cases are the suite's cases, in the order Run runs them and Table
// shows them.
var cases = slices.Concat(unaryCases, decodeCases, errorCases, limitCases, streamCases, lostCases)

// Run runs every case of the suite on the path b binds, each on a Server
// of its own, and demands of each the outcome it has on the reference
// path (tcp: a dispatch.Client over zerodial's wire), or the one b's
// declared differences make of it. Each case runs as a subtest of its
// name, with two of its own: "reference" (run once in a test binary,
// whatever the paths it runs the suite on), and the path's name; a path
// that shows another outcome than it declares fails the latter, with the
// case, the path and the outcome expected.
func Run(t *testing.T, b Binding) {
	if b.Profile.Name == "" || b.Serve == nil {
		t.Fatal("dispatchtest: a Binding needs a Profile with a Name, and Serve")
	}
	for i := range cases {
		c := &cases[i]
		t.Run(c.name, func(t *testing.T) { runCase(t, b, c) })
	}
}

func runCase(t *testing.T, b Binding, c *testCase) {
	ds, es := b.Profile.affecting(c)
	var instead func(*testing.T, Caller) Outcome
	wants := []Outcome{}
	var checks []func(*testing.T, Outcome)
	var docs []string
	for i, e := range es {
		docs = append(docs, ds[i].Name+": "+e.Doc)
		if e.Run != nil {
			if instead != nil {
				t.Fatalf("case %q on %s: two differences replace the case's run", c.name, b.Name())
			}
			instead = e.Run
		}
		if e.Check != nil {
			checks = append(checks, e.Check)
		}
		if e.Want == nil && e.Check == nil {
			t.Fatalf("case %q on %s: the difference %q says neither Want nor Check", c.name, b.Name(), ds[i].Name)
		}
	}

	var ref Outcome
	cached, refOK := references.Load(c.name)
	if refOK {
		ref = cached.(Outcome)
	} else {
		refOK = t.Run("reference", func(t *testing.T) {
			o := runOn(t, reference, c, nil)
			c.check(t, o)
			if !t.Failed() {
				references.Store(c.name, o)
			}
			ref = o
		})
	}
	if !refOK {
		t.Fatalf("case %q failed on the reference path: nothing to compare %s with", c.name, b.Name())
	}
	if len(es) == 0 || slices.ContainsFunc(es, func(e Effect) bool { return e.Want != nil }) {
		wants = append(wants, ref)
		for _, e := range es {
			if e.Want == nil {
				continue
			}
			var next []Outcome
			for _, w := range wants {
				for _, f := range e.Want {
					next = append(next, f(w))
				}
			}
			wants = next
		}
	}

	t.Run(b.Name(), func(t *testing.T) {
		got := runOn(t, b, c, instead)
		if len(es) == 0 {
			c.check(t, got)
		}
		for _, check := range checks {
			check(t, got)
		}
		if len(wants) > 0 && !slices.ContainsFunc(wants, func(w Outcome) bool { return reflect.DeepEqual(w, got) }) {
			why := "the reference path's outcome (it declares no difference affecting the case)"
			if len(docs) > 0 {
				why = "the outcome its differences declare (" + joinDocs(docs) + ")"
			}
			assert.Equal(t, wants[0], got, "case %q on path %s: want %s; %d outcomes allowed", c.name, b.Name(), why, len(wants))
		}
	})
}

func joinDocs(docs []string) string {
	s := ""
	for i, d := range docs {
		if i > 0 {
			s += "; "
		}
		s += d
	}
	return s
}

// runOn runs c's run (or instead) on a new Server of the suite's
// services served on b, in a synctest bubble when c waits on time and b
// can.
func runOn(t *testing.T, b Binding, c *testCase, instead func(*testing.T, Caller) Outcome) Outcome {
	var o Outcome
	bubble := c.timed && b.Bubble
	body := func(t *testing.T) {
		e := newEnv(t, b, Limits{})
		e.bubble = bubble
		if instead != nil {
			o = instead(t, e.caller)
			return
		}
		o = c.run(t, e)
	}
	if bubble {
		synctest.Test(t, body)
	} else {
		body(t)
	}
	return o
}

// references are the outcomes of the cases on the reference path, each
// run once by a test binary, whatever the paths it runs the suite on.
var references sync.Map // case name -> Outcome

// env is one case's Server, served on one path, and its Caller.
type env struct {
	t      *testing.T
	b      Binding
	srv    *dispatch.Server
	svc    *services
	caller Caller
	// bubble: the case runs in a synctest bubble.
	bubble bool
}

// newEnv serves a new Server of the suite's services, made with opts, on
// b with limits.
func newEnv(t *testing.T, b Binding, limits Limits, opts ...dispatch.ServerOption) *env {
	srv, svc, err := newServer(opts...)
	require.NoError(t, err)
	// Registered before Serve's own cleanups, so that it runs after them.
	t.Cleanup(func() { srv.Close() })
	return &env{t: t, b: b, srv: srv, svc: svc, caller: b.Serve(t, srv, limits)}
}

// again is a Server of its own on the same path, served with limits and
// made with opts.
func (e *env) again(limits Limits, opts ...dispatch.ServerOption) *env {
	return newEnv(e.t, e.b, limits, opts...)
}

// settle waits for what is under way to happen: in a bubble, until every
// goroutine in it is blocked (synctest.Wait), which is certain; elsewhere
// for d, which a loaded machine may not give it — so a case settles only
// before checking that something does not happen, never that it does.
func (e *env) settle(d time.Duration) {
	if e.bubble {
		synctest.Wait()
		return
	}
	time.Sleep(d)
}

// limit is the largest frame the path reads by default.
func (e *env) limit() int {
	if e.b.MaxFrame == 0 {
		return transport.DefaultMaxFrameSize
	}
	return e.b.MaxFrame
}

// call is Caller.Call with no metadata.
func (e *env) call(ctx context.Context, method string, args, reply any) error {
	return e.caller.Call(ctx, Call{Method: method, Args: args, Reply: reply})
}

// reference is the path every other is compared with: zerodial's wire
// over tcp, the network path with the fewest moving parts.
var reference = Binding{
	Profile: Profile{Name: "tcp"},
	Serve: func(t *testing.T, srv *dispatch.Server, l Limits) Caller {
		return ClientCaller(serveNetwork(t, srv, tcp.New(tcpLimit(l.Server)...), tcp.New(tcpLimit(l.Client)...)))
	},
	OtherProtocol: func(t *testing.T, srv *dispatch.Server) error {
		m := mux.New()
		t.Cleanup(func() { m.Close() })
		l, err := m.Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		t.Cleanup(func() { l.Close() })
		c, err := dispatch.Dial(context.Background(), tcp.New(), l.Addr().String())
		if c != nil {
			c.Close()
		}
		return err
	},
}

// serveNetwork serves srv on a new listener of st and returns a Client of
// it dialled over ct; the Client is closed when the test ends.
func serveNetwork(t *testing.T, srv *dispatch.Server, st, ct transport.Transport) *dispatch.Client {
	l, err := st.Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	c, err := dispatch.Dial(context.Background(), ct, l.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func tcpLimit(n int) []tcp.Option {
	if n == 0 {
		return nil
	}
	return []tcp.Option{tcp.WithMaxFrameSize(n)}
}
