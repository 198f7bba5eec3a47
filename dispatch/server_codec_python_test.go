package dispatch_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// pythonJSONRPC is a JSON-RPC 1.0 client in Python's standard library alone
// (socket and json): it writes every request of its first argument, a JSON
// array, on one connection without waiting (pipelined), then reads one
// reply per request, each a JSON object, and prints each on its own line.
const pythonJSONRPC = `
import json, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
requests = json.loads(sys.argv[2])
s = socket.create_connection((host, int(port)), timeout=10)
for r in requests:
    s.sendall(json.dumps(r).encode() + b"\n")
dec = json.JSONDecoder()
buf = ""
replies = []
while len(replies) < len(requests):
    chunk = s.recv(65536)
    if not chunk:
        sys.exit("connection closed after %d replies" % len(replies))
    buf += chunk.decode()
    while True:
        buf = buf.lstrip()
        try:
            obj, end = dec.raw_decode(buf)
        except ValueError:
            break
        replies.append(obj)
        buf = buf[end:]
s.close()
for r in replies:
    print(json.dumps(r))
`

// TestServeCodecPython calls a dispatch Server served with
// jsonrpc.NewServerCodec from a JSON-RPC 1.0 client written in another
// language: Python's standard library over a socket. Five requests are
// pipelined on one connection; each reply carries its own id, and the
// results, a handler's error, an unknown method and the panic rule read as
// they do for the Go client. It skips where python3 is missing.
func TestServeCodecPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the JSON-RPC client in another language is not run")
	}
	srv := dispatch.NewServer()
	require.NoError(t, srv.RegisterName("Arith", newArith()))
	addr := serveJSONRPC(t, srv)

	requests := `[
		{"method": "Arith.Multiply", "params": [{"A": 6, "B": 7}], "id": 1},
		{"method": "Arith.Fill", "params": [{"A": 3, "B": 4}], "id": "two"},
		{"method": "Arith.Fail", "params": [{"A": 1, "B": 2}], "id": 3},
		{"method": "Arith.Nope", "params": [{}], "id": 4},
		{"method": "Arith.Panic", "params": [{}], "id": 5}
	]`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", pythonJSONRPC, addr, requests).CombinedOutput()
	require.NoError(t, err, "python3: %s", out)

	type reply struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	got := map[string]reply{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		var r reply
		require.NoError(t, json.Unmarshal([]byte(line), &r), "reply %q", line)
		got[jsonText(t, r.ID)] = r
	}
	require.Len(t, got, 5, "python3 printed %s", out)

	assert.JSONEq(t, `42`, string(got["1"].Result))
	assert.Nil(t, got["1"].Error)
	assert.JSONEq(t, `{"X": 3, "S": "4", "List": [3, 4]}`, string(got[`"two"`].Result))
	assert.Equal(t, "arith: boom", got["3"].Error)
	assert.Equal(t, "rpc: can't find method Arith.Nope", got["4"].Error)
	assert.Equal(t, "dispatch: panic in Arith.Panic: kaboom", got["5"].Error)
	for _, id := range []string{"3", "4", "5"} {
		assert.JSONEq(t, `null`, string(got[id].Result), "id %s: a failed call's result", id)
	}
}

// jsonText is v as JSON, to key replies by id whatever its type.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
