package describe_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
)

// Base is embedded in Node.
type Base struct {
	ID      int    `json:"id"`
	Hidden  string `json:"-"`
	Shadow  string `json:"shadow"`
	private int    // not in the JSON, so not described
}

var _ = Base{private: 1}

// Node contains itself, and a field of each kind.
type Node struct {
	Base
	Shadow   bool            `json:"shadow"`
	Children []*Node         `json:"children,omitempty"`
	When     time.Time       `json:"when"`
	Blob     []byte          `json:"blob"`
	Scores   map[string]int  `json:"scores"`
	Any      any             `json:"any"`
	Pair     [2]float64      `json:"pair"`
	IP       net.IP          `json:"ip"`  // a TextMarshaler: a string
	Raw      json.RawMessage `json:"raw"` // a json.Marshaler: its own
	Ch       chan int        `json:"-"`
	Inline   struct{ X uint8 }
}

type Pair struct {
	A int `json:"a"`
	B int `json:"b"`
}

type Tick struct{ I int }

// toJSON is v as encoding/json writes it, to compare schemas as JSON.
func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestDescribeOf(t *testing.T) {
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	assert.JSONEq(t, `{"methods": []}`, toJSON(t, describe.Of(srv)))

	require.NoError(t, dispatch.Handle(srv, "Tree.Walk", func(ctx context.Context, n *Node, r *[]string) error { return nil }))
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, p *Pair, r *int) error { return nil }))
	require.NoError(t, dispatch.HandleStream(srv, "Calc.Ticks", func(ctx context.Context, s *dispatch.ServerStream[Pair, Tick]) error { return nil }))
	d := describe.Of(srv)

	var names []string
	for _, m := range d.Methods {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"Calc.Add", "Calc.Ticks", "Tree.Walk"}, names)
	add, ticks, walk := d.Methods[0], d.Methods[1], d.Methods[2]
	assert.False(t, add.Stream)
	assert.Equal(t, describe.Schema{"$ref": "#/$defs/describe_test.Pair"}, add.Args)
	assert.Equal(t, describe.Schema{"type": "integer"}, add.Reply)
	assert.True(t, ticks.Stream)
	assert.Equal(t, describe.Schema{"$ref": "#/$defs/describe_test.Tick"}, ticks.Reply)
	assert.JSONEq(t, `{"type":["array","null"],"items":{"type":"string"}}`, toJSON(t, walk.Reply))

	assert.JSONEq(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`, toJSON(t, d.Defs["describe_test.Pair"]))
	assert.JSONEq(t, `{"type":"object","properties":{
		"id":{"type":"integer"},
		"shadow":{"type":"boolean"},
		"children":{"type":["array","null"],"items":{"anyOf":[{"$ref":"#/$defs/describe_test.Node"},{"type":"null"}]}},
		"when":{"type":"string","format":"date-time"},
		"blob":{"type":"string","contentEncoding":"base64"},
		"scores":{"type":["object","null"],"additionalProperties":{"type":"integer"}},
		"any":{},
		"pair":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2},
		"ip":{"type":"string"},
		"raw":{"description":"JSON of json.RawMessage's own"},
		"Inline":{"type":"object","properties":{"X":{"type":"integer"}}}
	}}`, toJSON(t, d.Defs["describe_test.Node"]))
	assert.Len(t, d.Defs, 3, "Pair, Tick and Node, each once")

	// What it describes is what encoding/json takes.
	var n Node
	require.NoError(t, json.Unmarshal([]byte(`{"id":1,"shadow":true,"children":[{"id":2}],"when":"2026-01-02T03:04:05Z","blob":"AAE=","pair":[1,2],"ip":"127.0.0.1","raw":[1]}`), &n))
	assert.Equal(t, 2, n.Children[0].ID)

	// Methods registered later appear in later descriptions.
	require.NoError(t, dispatch.Handle(srv, "A.First", func(ctx context.Context, p *string, r *string) error { return nil }))
	assert.Equal(t, "A.First", describe.Of(srv).Methods[0].Name)
}

// Two types of one name, from two scopes, get two definitions.
func TestDescribeOfSameName(t *testing.T) {
	type Pair struct{ X string }
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, dispatch.Handle(srv, "A.Outer", func(ctx context.Context, p *struct {
		Outer Pair
		Inner *Pair
	}, r *int) error {
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "B.Local", func(ctx context.Context, p *Pair, r *int) error { return nil }))
	d := describe.Of(srv)
	require.Len(t, d.Defs, 1)
	assert.Contains(t, d.Defs, "describe_test.Pair")
	srv2 := dispatch.NewServer()
	t.Cleanup(func() { srv2.Close() })
	type other = Pair
	require.NoError(t, dispatch.Handle(srv2, "A.Both", func(ctx context.Context, p *struct {
		Mine   other
		Theirs outerPair
	}, r *int) error {
		return nil
	}))
	d = describe.Of(srv2)
	require.Len(t, d.Defs, 2, "%v", d.Defs)
	assert.Contains(t, d.Defs, "describe_test.Pair")
	assert.Contains(t, d.Defs, "describe_test.Pair~2")
	assert.JSONEq(t, `{"type":"object","properties":{
		"Mine":{"$ref":"#/$defs/describe_test.Pair"},
		"Theirs":{"$ref":"#/$defs/describe_test.Pair~02"}}}`, toJSON(t, d.Methods[0].Args))
}

// outerPair is a Pair of the package scope, beside the test's own.
type outerPair = Pair
