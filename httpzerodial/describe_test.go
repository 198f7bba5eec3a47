package httpzerodial_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/httpzerodial"
)

// Base is embedded in Node.
type Base struct {
	ID      int    `json:"id"`
	Hidden  string `json:"-"`
	Shadow  string `json:"shadow"`
	private int    // not in the JSON, so not described
}

var _ = Base{private: 1}

// Node contains itself.
type Node struct {
	Base
	Shadow   bool           `json:"shadow"`
	Children []*Node        `json:"children,omitempty"`
	When     time.Time      `json:"when"`
	Blob     []byte         `json:"blob"`
	Scores   map[string]int `json:"scores"`
	Any      any            `json:"any"`
	Pair     [2]float64     `json:"pair"`
}

func TestDescribe(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	require.NoError(t, dispatch.Handle(srv, "Tree.Walk", func(ctx context.Context, n *Node, r *[]string) error { return nil }))
	mux := http.NewServeMux()
	mux.Handle("/", httpzerodial.NewHandler(srv))
	mux.Handle("/describe", httpzerodial.Describe(srv))
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	hc := httpClient(t, false)

	res, err := hc.Get(ts.URL + "/describe")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	var d struct {
		Methods []struct {
			Name   string         `json:"name"`
			Path   string         `json:"path"`
			Stream bool           `json:"stream"`
			Args   map[string]any `json:"args"`
			Reply  map[string]any `json:"reply"`
		} `json:"methods"`
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(body, &d), "%s", body)

	var names []string
	for _, m := range d.Methods {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"Calc.Add", "Calc.Count", "Calc.Echo", "Calc.Fail", "Calc.Hold", "Calc.Panic", "Calc.Slow", "Calc.Total", "Tree.Walk"}, names)
	add, count, walk := d.Methods[0], d.Methods[1], d.Methods[8]
	assert.Equal(t, "/Calc/Add", add.Path)
	assert.False(t, add.Stream)
	assert.Equal(t, map[string]any{"$ref": "#/$defs/httpzerodial_test.Pair"}, add.Args)
	assert.Equal(t, map[string]any{"type": "integer"}, add.Reply)
	assert.True(t, count.Stream)
	assert.Equal(t, map[string]any{"type": []any{"array", "null"}, "items": map[string]any{"type": "string"}}, walk.Reply)

	assert.JSONEq(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`, string(d.Defs["httpzerodial_test.Pair"]))
	assert.JSONEq(t, `{"type":"object","properties":{
		"id":{"type":"integer"},
		"shadow":{"type":"boolean"},
		"children":{"type":["array","null"],"items":{"anyOf":[{"$ref":"#/$defs/httpzerodial_test.Node"},{"type":"null"}]}},
		"when":{"type":"string","format":"date-time"},
		"blob":{"type":"string","contentEncoding":"base64"},
		"scores":{"type":["object","null"],"additionalProperties":{"type":"integer"}},
		"any":{},
		"pair":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}
	}}`, string(d.Defs["httpzerodial_test.Node"]))

	// What it describes is what a call takes.
	res, err = hc.Post(ts.URL+"/Tree/Walk", "application/json", strings.NewReader(`{"id":1,"shadow":true,"children":[{"id":2}],"when":"2026-01-02T03:04:05Z","blob":"AAE=","pair":[1,2]}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	res, err = hc.Post(ts.URL+"/describe", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}

func TestHealthOverHTTP(t *testing.T) {
	// The health service is a Server's methods: served over HTTP as any.
	srv := dispatch.NewServer()
	h := health.NewServer()
	require.NoError(t, h.Register(srv))
	ts := serve(t, srv)
	hc := httpClient(t, false)
	check := func(service string) (int, string) {
		res, err := hc.Post(ts.URL+"/Health/Check", "application/json", strings.NewReader(`{"Service":"`+service+`"}`))
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	code, body := check("")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"Status":"SERVING"}`, body)
	h.SetServingStatus("calc", health.NotServing)
	_, body = check("calc")
	assert.JSONEq(t, `{"Status":"NOT_SERVING"}`, body)
	code, body = check("nope")
	assert.Equal(t, http.StatusNotFound, code)
	assert.JSONEq(t, `{"code":"not_found","message":"health: unknown service nope"}`, body)
}
