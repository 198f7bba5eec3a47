package describe_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// served starts srv on a loopback listener of tr and returns a Client of
// it, both closed when the test ends.
func served(t *testing.T, srv *dispatch.Server, tr transport.Transport, addr string, opts ...dispatch.ClientOption) *dispatch.Client {
	t.Helper()
	l, err := tr.Listen(addr)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dispatch.Dial(ctx, tr, l.Addr().String(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		tr.Close()
	})
	return c
}

// The description a Client fetches over a real tcp or mux connection is
// the one Of gives, itself included, and it follows what is registered.
func TestDescribeRegister(t *testing.T) {
	for _, p := range []struct {
		name string
		tr   transport.Transport
		addr string
		opts []dispatch.ClientOption
	}{
		{"tcp", tcp.New(), "127.0.0.1:0", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutOff)}},
		{"mux", mux.New(), "127.0.0.1:0", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutOff)}},
		{"memory", memory.New(), "", []dispatch.ClientOption{dispatch.WithShortcut(dispatch.ShortcutOff)}},
		{"shortcut", memory.New(), "", nil},
	} {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			require.NoError(t, dispatch.Handle(srv, "Tree.Walk", func(ctx context.Context, n *Node, r *[]string) error { return nil }))
			require.NoError(t, dispatch.HandleStream(srv, "Calc.Ticks", func(ctx context.Context, s *dispatch.ServerStream[Pair, Tick]) error { return nil }))
			require.NoError(t, describe.Register(srv))
			c := served(t, srv, p.tr, p.addr, p.opts...)
			ctx := context.Background()

			got, err := describe.Fetch(ctx, c)
			require.NoError(t, err)
			want := describe.Of(srv)
			assert.JSONEq(t, toJSON(t, want), toJSON(t, got))
			var names []string
			for _, m := range got.Methods {
				names = append(names, m.Name)
			}
			assert.Equal(t, []string{"Calc.Ticks", describe.Method, "Tree.Walk"}, names)
			assert.Equal(t, "#/$defs/describe.Description", got.Methods[1].Reply["$ref"])

			// A generic caller (cmd/zerodial's) reads the same keys.
			var raw map[string]any
			require.NoError(t, c.Call(ctx, describe.Method, map[string]any{}, &raw))
			assert.Contains(t, raw, "methods")
			assert.Contains(t, raw, "$defs")

			require.NoError(t, dispatch.Handle(srv, "A.Late", func(ctx context.Context, s *string, r *string) error { return nil }))
			got, err = describe.Fetch(ctx, c)
			require.NoError(t, err)
			assert.Equal(t, "A.Late", got.Methods[0].Name)
			assert.Equal(t, describe.Schema{"type": "string"}, got.Methods[0].Args)
		})
	}
}

// A Server that did not register the service says so with not_found.
func TestDescribeNotRegistered(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, p *Pair, r *int) error { return nil }))
	c := served(t, srv, tcp.New(), "127.0.0.1:0", dispatch.WithShortcut(dispatch.ShortcutOff))
	_, err := describe.Fetch(context.Background(), c)
	var e *dispatch.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, dispatch.CodeNotFound, e.Code)
	assert.Contains(t, e.Message, describe.Method)
}

// Registering twice fails as any method registered twice does.
func TestDescribeRegisterTwice(t *testing.T) {
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, describe.Register(srv))
	assert.Error(t, describe.Register(srv))
}

// In msgpack a description has its JSON names, so that a caller that
// decodes it without its type (cmd/zerodial, another language) reads the
// keys JSON readers do.
func TestDescribeMsgpackNames(t *testing.T) {
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, describe.Register(srv))
	b, err := codec.Msgpack.Marshal(describe.Of(srv))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, codec.Msgpack.Unmarshal(b, &m))
	assert.ElementsMatch(t, []string{"methods", "$defs"}, slices.Collect(maps.Keys(m)))
	methods, ok := m["methods"].([]any)
	require.True(t, ok, "%T", m["methods"])
	require.Len(t, methods, 1)
	method, ok := methods[0].(map[string]any)
	require.True(t, ok, "%T", methods[0])
	assert.ElementsMatch(t, []string{"name", "stream", "args", "reply"}, slices.Collect(maps.Keys(method)))
	assert.Equal(t, describe.Method, method["name"])
}
