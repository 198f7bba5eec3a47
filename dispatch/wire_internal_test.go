package dispatch

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/zerodial/transport/internal/rpcwire"
)

// TestHeaderFill: a header map that held another message's headers holds
// the new message's alone once requestHeader or responseHeader has filled
// it, whether it held the same keys, more, or others as many.
func TestHeaderFill(t *testing.T) {
	ctx, cancel := context.WithTimeout(WithMetadata(context.Background(), Metadata{"k": "v"}), time.Hour)
	defer cancel()
	e := &Error{Code: CodeNotFound, Message: "no"}
	before := map[string]map[string]string{
		"empty":     {},
		"same keys": {rpcwire.ServiceMethod: "Old.M", rpcwire.Seq: "9"},
		"more keys": {rpcwire.ServiceMethod: "Old.M", rpcwire.Seq: "9", rpcwire.Timeout: "1s", rpcwire.MetadataPrefix + "x": "y"},
		"others":    {rpcwire.Error: "e", rpcwire.ErrorCode: "c"},
	}
	fills := map[string]struct {
		fill func(h map[string]string)
		want map[string]string
	}{
		"request": {
			func(h map[string]string) { fillRequest(context.Background(), h, "A.M", "1", "msgpack") },
			map[string]string{rpcwire.ServiceMethod: "A.M", rpcwire.Seq: "1"},
		},
		"request with metadata": {
			func(h map[string]string) {
				fillRequest(WithMetadata(context.Background(), Metadata{"k": "v"}), h, "A.M", "1", "json")
			},
			map[string]string{rpcwire.ServiceMethod: "A.M", rpcwire.Seq: "1", rpcwire.ContentType: "json", rpcwire.MetadataPrefix + "k": "v"},
		},
		"reply": {
			func(h map[string]string) { responseHeader(h, "A.M", "1", nil, nil) },
			map[string]string{rpcwire.ServiceMethod: "A.M", rpcwire.Seq: "1"},
		},
		"error reply with metadata": {
			func(h map[string]string) { responseHeader(h, "A.M", "1", e, Metadata{"k": "v"}) },
			map[string]string{rpcwire.ServiceMethod: "A.M", rpcwire.Seq: "1", rpcwire.Error: "no", rpcwire.ErrorCode: string(CodeNotFound), rpcwire.MetadataPrefix + "k": "v"},
		},
	}
	for fname, f := range fills {
		for bname, b := range before {
			h := maps.Clone(b)
			f.fill(h)
			if !maps.Equal(h, f.want) {
				t.Errorf("%s over %s: %v, want %v", fname, bname, h, f.want)
			}
		}
	}
	// A deadline adds Timeout.
	h := map[string]string{rpcwire.ServiceMethod: "Old.M", rpcwire.Seq: "9"}
	fillRequest(ctx, h, "A.M", "1", "msgpack")
	if _, ok := h[rpcwire.Timeout]; !ok || len(h) != 4 {
		t.Errorf("request with a deadline and metadata: %v", h)
	}
}

// fillRequest fills h with the headers of a request of name made with ctx,
// its body in the content type ctype, as a Client's connection does.
func fillRequest(ctx context.Context, h map[string]string, name, seqText, ctype string) {
	var d callDesc
	d.fromContext(ctx, name)
	requestHeader(h, &d, seqText, ctype)
}

// TestReceivedHeader: readHeader answers every lookup, the metadata and the
// sequence number as the map itself does, whether the map holds Seq and
// Service-Method alone, one of them, neither, or more.
func TestReceivedHeader(t *testing.T) {
	keys := []string{rpcwire.Drain, rpcwire.Cancel, rpcwire.Stream, rpcwire.ContentType, rpcwire.Window,
		rpcwire.Timeout, rpcwire.Error, rpcwire.ErrorCode, rpcwire.MetadataPrefix + "k", "Other"}
	for name, h := range map[string]map[string]string{
		"nil":              nil,
		"empty":            {},
		"call":             {rpcwire.ServiceMethod: "S.M", rpcwire.Seq: "7"},
		"seq alone":        {rpcwire.Seq: "7"},
		"name alone":       {rpcwire.ServiceMethod: "S.M"},
		"empty values":     {rpcwire.ServiceMethod: "", rpcwire.Seq: ""},
		"drain":            {rpcwire.Drain: ""},
		"other alone":      {"Other": "x"},
		"seq and other":    {rpcwire.Seq: "7", "Other": "x"},
		"call and error":   {rpcwire.ServiceMethod: "S.M", rpcwire.Seq: "7", rpcwire.Error: "no", rpcwire.ErrorCode: "not_found"},
		"call and md":      {rpcwire.ServiceMethod: "S.M", rpcwire.Seq: "7", rpcwire.MetadataPrefix + "k": "v"},
		"call and timeout": {rpcwire.ServiceMethod: "S.M", rpcwire.Seq: "18446744073709551615", rpcwire.Timeout: "5"},
		"stream":           {rpcwire.Seq: "1", rpcwire.Stream: rpcwire.StreamOpen, rpcwire.Window: "10", rpcwire.ContentType: "json"},
		"bad seq":          {rpcwire.ServiceMethod: "S.M", rpcwire.Seq: "+1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := readHeader(h)
			seq, ok := h[rpcwire.Seq]
			if r.seq != seq || r.hasSeq != ok {
				t.Errorf("seq = %q, %v; the map holds %q, %v", r.seq, r.hasSeq, seq, ok)
			}
			sm, ok := h[rpcwire.ServiceMethod]
			if r.name != sm || r.hasName != ok {
				t.Errorf("name = %q, %v; the map holds %q, %v", r.name, r.hasName, sm, ok)
			}
			for _, k := range keys {
				v, ok := r.get(k)
				wv, wok := h[k]
				if v != wv || ok != wok || r.has(k) != wok {
					t.Errorf("get(%q) = %q, %v; the map holds %q, %v", k, v, ok, wv, wok)
				}
			}
			if got, want := r.metadata(), metadataOf(h); !maps.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("metadata = %v, want %v", got, want)
			}
			n, err := r.parseSeq()
			wn, werr := rpcwire.ParseSeq(h)
			if n != wn || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
				t.Errorf("parseSeq = %d, %v; ParseSeq: %d, %v", n, err, wn, werr)
			}
		})
	}
}
