package httpzerodial_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// Record has fields of many kinds, for the decoders to meet hostile input.
type Record struct {
	Name  string            `json:"name" msgpack:"name"`
	Tags  []string          `json:"tags" msgpack:"tags"`
	Attrs map[string]int    `json:"attrs" msgpack:"attrs"`
	Next  *Record           `json:"next" msgpack:"next"`
	Raw   []byte            `json:"raw" msgpack:"raw"`
	Any   any               `json:"any" msgpack:"any"`
	Meta  map[string]string `json:"meta" msgpack:"meta"`
	N     float64           `json:"n" msgpack:"n"`
}

// FuzzRequest sends any body with any content type to a unary method and
// to a streaming one, through the whole Handler: the answer is a reply or
// a coded error, never a panic, and the Handler goes on.
func FuzzRequest(f *testing.F) {
	srv := dispatch.NewServer()
	f.Cleanup(func() { srv.Close() })
	echo := func(ctx context.Context, r *Record, out *Record) error { *out = *r; return nil }
	if err := dispatch.Handle(srv, "Rec.Echo", echo); err != nil {
		f.Fatal(err)
	}
	if err := dispatch.HandleStream(srv, "Rec.Stream", func(ctx context.Context, s *dispatch.ServerStream[Record, Record]) error {
		for r, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		f.Fatal(err)
	}
	h := httpzerodial.NewHandler(srv, httpzerodial.WithReadMaxBytes(1<<16))

	mp, _ := codec.Msgpack.Marshal(&Record{Name: "n", Tags: []string{"a"}, Attrs: map[string]int{"x": 1}})
	f.Add("/Rec/Echo", "application/json", []byte(`{"name":"n","tags":["a"],"next":{"name":"m"}}`))
	f.Add("/Rec/Echo", "application/json; charset=utf-8", []byte(`{"attrs":{"a":1},"any":[1,"x",{}]}`))
	f.Add("/Rec/Echo", "application/msgpack", mp)
	f.Add("/Rec/Echo", "application/json", []byte(`{"name":`))
	f.Add("/Rec/Echo", "application/grpc+json", append([]byte{0, 0, 0, 0, 2}, `{}`...))
	f.Add("/Rec/Stream", "application/connect+json", append(envelope(0, `{"name":"a"}`), envelope(0, `{"n":1}`)...))
	f.Add("/Rec/Stream", "application/connect+msgpack", envelope(0, string(mp)))
	f.Add("/Rec/Stream", "application/connect+json", []byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, path, contentType string, body []byte) {
		if path != "/Rec/Echo" && path != "/Rec/Stream" {
			path = "/Rec/Echo"
		}
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch code := w.Code; {
		case code == http.StatusOK:
			if contentType == "application/json" && path == "/Rec/Echo" {
				var r Record
				if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
					t.Fatalf("a reply that is not JSON: %q: %v", w.Body.Bytes(), err)
				}
			}
		case code >= 400 && code < 600:
		default:
			t.Fatalf("status %d", code)
		}
	})
}
