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
			func(h map[string]string) { requestHeader(context.Background(), h, "A.M", "1", "msgpack") },
			map[string]string{rpcwire.ServiceMethod: "A.M", rpcwire.Seq: "1"},
		},
		"request with metadata": {
			func(h map[string]string) {
				requestHeader(WithMetadata(context.Background(), Metadata{"k": "v"}), h, "A.M", "1", "json")
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
	requestHeader(ctx, h, "A.M", "1", "msgpack")
	if _, ok := h[rpcwire.Timeout]; !ok || len(h) != 4 {
		t.Errorf("request with a deadline and metadata: %v", h)
	}
}
