package dispatch_test

import (
	"context"
	"io"
	"math"
	"net/rpc"
	"net/rpc/jsonrpc"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
	"github.com/zerodial/transport/tcp"
)

// A resolver's target given without WithResolver is refused by Dial and
// DialCodec, naming the target and the option that was missing, rather
// than dialled as an address (tcp's "too many colons in address", or no
// listener at all on memory). An address with no such scheme is dialled.
func TestDialResolverTargetWithoutResolver(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   transport.Transport
	}{{"tcp", tcp.New()}, {"memory", memory.New()}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range []string{"static:///127.0.0.1:1,127.0.0.1:2", "dns:///svc.ns.svc.cluster.local:7000", "DNS://8.8.8.8/svc:7000"} {
				c, err := dispatch.Dial(t.Context(), tc.tr, target)
				if !assert.Error(t, err, target) {
					c.Close()
					continue
				}
				scheme, _, _ := resolver.SplitTarget(target)
				assert.Equal(t, `dispatch: Dial "`+target+`": the target has the resolver scheme "`+scheme+`", but no resolver was given: `+
					`pass dispatch.WithResolver(resolver.Default) to call the replicas it names`, err.Error())
			}
		})
	}
	_, err := dispatch.DialCodec(t.Context(), nil, "tcp", "static:///127.0.0.1:1,127.0.0.1:2",
		func(c io.ReadWriteCloser) rpc.ClientCodec { return jsonrpc.NewClientCodec(c) })
	assert.EqualError(t, err, `dispatch: DialCodec "static:///127.0.0.1:1,127.0.0.1:2": the target has the resolver scheme "static", but no resolver was given: `+
		`pass dispatch.WithResolver(resolver.Default) to call the replicas it names`)

	// With the resolver, the same target is a Client of its replicas.
	c, err := dispatch.Dial(t.Context(), memory.New(), "static:///a:1,b:2", dispatch.WithResolver(resolver.Default))
	require.NoError(t, err)
	c.Close()

	// A scheme no resolver of resolver.Default knows, and a plain
	// address, are dialled: what fails is the dial.
	tr := memory.New()
	for _, addr := range []string{"svc:7000", "etcd:///svc", "a:1"} {
		_, err := dispatch.Dial(t.Context(), tr, addr)
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), "dispatch: dial memory "+addr+":", addr)
	}
	addr := freeAddr(t) // nobody listens: the dial is made, and refused
	_, err = dispatch.Dial(t.Context(), tcp.New(), addr)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dispatch: dial tcp "+addr+":", "a plain host:port is dialled")
}

// WithIdempotent refuses every name that is not "Service.Method" — it
// would match no call — naming each, and keeps the others.
func TestWithIdempotentNames(t *testing.T) {
	_, err := dispatch.Dial(t.Context(), memory.New(), "svc", dispatch.WithResolver(resolver.Default),
		dispatch.WithIdempotent("Get", "Arith.Multiply", "", "Arith.", ".Multiply", "Arith"))
	const hint = `: not a method's full name: name it "Service.Method", as calls do`
	assert.EqualError(t, err, `dispatch: WithIdempotent("Get")`+hint+"\n"+
		`dispatch: WithIdempotent("")`+hint+"\n"+
		`dispatch: WithIdempotent("Arith.")`+hint+"\n"+
		`dispatch: WithIdempotent(".Multiply")`+hint+"\n"+
		`dispatch: WithIdempotent("Arith")`+hint)
	c, err := dispatch.Dial(t.Context(), memory.New(), "static:///a:1", dispatch.WithResolver(resolver.Default),
		dispatch.WithIdempotent("Arith.Multiply", "pkg.Arith.Multiply"))
	require.NoError(t, err, "names of the form Service.Method, a service's name with dots included")
	c.Close()
}

// Each replica option reports every bad value it was given, not only the
// first, and every option's problems are reported together.
func TestReplicaOptionsReportEveryValue(t *testing.T) {
	dial := func(opts ...dispatch.ClientOption) error {
		c, err := dispatch.Dial(t.Context(), memory.New(), "static:///a:1", append(opts, dispatch.WithResolver(resolver.Default))...)
		if err == nil {
			c.Close()
		}
		return err
	}
	assert.EqualError(t, dial(dispatch.WithEjection(0, 0)),
		"dispatch: WithEjection(0): failures must be at least 1\n"+
			"dispatch: WithEjection(0s): the time must be positive")
	assert.EqualError(t, dial(dispatch.WithEjection(-1, math.MaxInt64/32+1)),
		"dispatch: WithEjection(-1): failures must be at least 1\n"+
			"dispatch: WithEjection(80063h59m36.151711744s): the time must be at most 80063h59m36.151711743s")
	assert.EqualError(t, dial(dispatch.WithReplicaCheck(nil, -time.Second)),
		"dispatch: WithReplicaCheck(nil): no check\n"+
			"dispatch: WithReplicaCheck(-1s): the interval must be positive")
	assert.EqualError(t, dial(dispatch.WithRetryBudget(dispatch.RetryBudget{Max: -1, Ratio: 2})),
		"dispatch: WithRetryBudget({Max:-1 Ratio:2}): Max must be positive\n"+
			"dispatch: WithRetryBudget({Max:-1 Ratio:2}): Ratio must be from 0 to Max")
	assert.EqualError(t, dial(dispatch.WithRetryBudget(dispatch.RetryBudget{Max: math.NaN(), Ratio: 0})),
		"dispatch: WithRetryBudget({Max:NaN Ratio:0}): Max must be positive", "a NaN Max is no budget")
	assert.EqualError(t, dial(dispatch.WithRetryBudget(dispatch.RetryBudget{Max: 10, Ratio: math.NaN()})),
		"dispatch: WithRetryBudget({Max:10 Ratio:NaN}): Ratio must be from 0 to Max")
	assert.EqualError(t, dial(dispatch.WithEjection(0, 0), dispatch.WithIdempotent("Get"), dispatch.WithLocalLimit(-1)),
		"dispatch: WithEjection(0): failures must be at least 1\n"+
			"dispatch: WithEjection(0s): the time must be positive\n"+
			`dispatch: WithIdempotent("Get"): not a method's full name: name it "Service.Method", as calls do`+"\n"+
			"dispatch: WithLocalLimit(-1): must not be negative",
		"every option's problems, in the order given")
	check := func(context.Context, *dispatch.Client) error { return nil }
	assert.NoError(t, dial(dispatch.WithEjection(1, time.Millisecond), dispatch.WithReplicaCheck(check, time.Second),
		dispatch.WithRetryBudget(dispatch.RetryBudget{Max: 1, Ratio: 1})), "the bounds themselves are valid")
}

// ServerOptions applies each of its options, in order, skipping nil ones:
// their problems are reported as if they had been given one by one.
func TestServerOptions(t *testing.T) {
	srv := dispatch.NewServer(dispatch.ServerOptions(dispatch.WithMaxCallsPerConn(0), nil, dispatch.WithIdleTimeout(-time.Second)),
		dispatch.WithReplyTimeout(-time.Second))
	defer srv.Close()
	l, err := memory.New().Listen("")
	require.NoError(t, err)
	defer l.Close()
	assert.EqualError(t, srv.Start(l), "dispatch: WithMaxCallsPerConn(0): must be at least 1\n"+
		"dispatch: WithIdleTimeout(-1s): must not be negative\n"+
		"dispatch: WithReplyTimeout(-1s): must not be negative")
}
