//go:build unix

package httpzerodial_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// browserPage calls the Handler the way a web page does, with fetch: a
// unary call as a plain POST of JSON, a handler's error, and a server
// stream in the Connect protocol's envelopes (a flags byte, a big-endian
// length, a JSON message; flags 2 marks the end of the stream, whose JSON
// carries the error, if any). It posts what it saw to /report.
const browserPage = `<!doctype html><html><body><script>
async function run() {
  const out = [];
  const post = (path, body) => fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  let r = await post("/Calc/Add", {A: 2, B: 3});
  out.push("add " + r.status + " " + (await r.json()));
  r = await post("/Calc/Fail", {A: 1, B: 2});
  const e = await r.json();
  out.push("fail " + r.status + " " + e.code + " " + e.message);
  const msg = new TextEncoder().encode(JSON.stringify({A: 3, B: 0}));
  const req = new Uint8Array(5 + msg.length);
  new DataView(req.buffer).setUint32(1, msg.length);
  req.set(msg, 5);
  r = await fetch("/Calc/Count", {method: "POST", headers: {"Content-Type": "application/connect+json"}, body: req});
  const buf = new Uint8Array(await r.arrayBuffer());
  const got = [];
  for (let i = 0; i + 5 <= buf.length; ) {
    const flags = buf[i], n = new DataView(buf.buffer, buf.byteOffset + i + 1, 4).getUint32(0);
    const text = new TextDecoder().decode(buf.subarray(i + 5, i + 5 + n));
    got.push(flags & 2 ? "end " + text : text);
    i += 5 + n;
  }
  out.push("count " + r.status + " " + got.join(","));
  return out.join("\n");
}
run().catch(err => "error " + err).then(text => fetch("/report", {method: "POST", body: text}));
</script></body></html>`

// browser returns a headless browser's path, or skips the test.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no headless browser (chromium) on this machine")
	return ""
}

// TestBrowserFetch: a page in a real headless browser calls a Server with
// fetch — a unary call, a handler's error with its code, and a server
// stream — served from the same origin as the Handler.
func TestBrowserFetch(t *testing.T) {
	bin := browser(t)
	srv := dispatch.NewServer()
	newCalc(t, srv)
	reports := make(chan string, 1)
	mux := http.NewServeMux()
	mux.Handle("/Calc/", httpzerodial.NewHandler(srv))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, browserPage)
	})
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case reports <- string(b):
		default:
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), ts.URL+"/")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// Its own process group, so that the browser's helper processes end
	// with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()

	select {
	case got := <-reports:
		assert.Equal(t, "add 200 5\n"+
			"fail 400 failed_precondition the sum is odd\n"+
			"count 200 1,2,3,end {\"metadata\":{\"Counted\":[\"yes\"]}}", got)
	case <-ctx.Done():
		t.Fatalf("the page reported nothing within a minute; the browser said:\n%s", logs.String())
	}
}
