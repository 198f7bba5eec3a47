package rpcdebug_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/rpcdebug"
)

// A method of raw bodies registered with what they hold
// (dispatch.WithEncoding, as grpczerodial registers a gRPC method) is
// shown with it — its gRPC name and its protobuf messages — in the
// Snapshot, the HTML page and, below the figures, the text table.
func TestBodies(t *testing.T) {
	stats := rpcdebug.New()
	srv := dispatch.NewServer(stats.Option())
	e := dispatch.Encoding{Name: "protobuf", Args: "grpc.testing.SimpleRequest", Reply: "grpc.testing.SimpleResponse",
		Origin: "gRPC method /grpc.testing.TestService/UnaryCall"}
	raw := func(ctx context.Context, a, r *codec.Raw) error { return nil }
	require.NoError(t, dispatch.Handle(srv, "grpc.testing.TestService.UnaryCall", raw, dispatch.WithEncoding(e)))
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *[2]int, r *int) error { return nil }))
	const bodies = "protobuf grpc.testing.SimpleRequest → grpc.testing.SimpleResponse (gRPC method /grpc.testing.TestService/UnaryCall)"

	rows := stats.Snapshot(srv)
	require.Len(t, rows, 2)
	assert.Equal(t, "", rows[0].Bodies)
	assert.Equal(t, bodies, rows[1].Bodies)

	get := func(target string) string {
		rec := httptest.NewRecorder()
		stats.Handler(srv).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Body.String()
	}
	assert.Contains(t, get("/debug/rpc"), "<td>grpc.testing.TestService.UnaryCall<br><small>protobuf grpc.testing.SimpleRequest → grpc.testing.SimpleResponse (gRPC method /grpc.testing.TestService/UnaryCall)</small></td>")
	lines := strings.Split(strings.TrimSpace(get("/debug/rpc?format=text")), "\n")
	require.Len(t, lines, 6)
	assert.Regexp(t, `^METHOD\s+BODIES$`, lines[4])
	assert.Regexp(t, `^grpc\.testing\.TestService\.UnaryCall\s+`+strings.NewReplacer("(", `\(`, ")", `\)`, ".", `\.`).Replace(bodies)+`$`, lines[5])
}
