package httpzerodial_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// The curl binary as a client: what a person trying a method by hand
// does. Skipped where there is no curl.

// curl runs curl with args, and returns its stdout and exit code.
func curl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	bin, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl binary on this machine")
	}
	cmd := exec.Command(bin, append([]string{"--silent", "--show-error", "--max-time", "20"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	t.Fatalf("curl: %v: %s", err, stderr.String())
	return "", 0
}

func TestCurlUnary(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	ts := serve(t, srv)
	for _, version := range []string{"--http1.1", "--http2-prior-knowledge"} {
		out, code := curl(t, version, "--fail-with-body", "--include",
			"-H", "Content-Type: application/json", "-H", "Trace-Id: from-curl",
			"-d", `{"a":2,"b":3}`, ts.URL+"/Calc/Add")
		require.Zero(t, code, out)
		head, body, _ := bytes.Cut([]byte(out), []byte("\r\n\r\n"))
		assert.Equal(t, "5", string(body), version)
		assert.Contains(t, string(bytes.ToLower(head)), "answered-by: calc", version)
		assert.Equal(t, dispatch.Metadata{"trace-id": "from-curl"}, c.seen().md, version)
	}
}

// connectError is the JSON body of a Connect error.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func curlError(t *testing.T, args ...string) (int, connectError) {
	t.Helper()
	out, exit := curl(t, append([]string{"--write-out", "\n%{http_code}", "-H", "Content-Type: application/json"}, args...)...)
	require.Zero(t, exit, out)
	body, status, _ := bytes.Cut([]byte(out), []byte("\n"))
	var e connectError
	require.NoError(t, json.Unmarshal(body, &e), "body %q", body)
	var code int
	require.NoError(t, json.Unmarshal(status, &code))
	return code, e
}

func TestCurlErrors(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)

	status, e := curlError(t, "-d", `{}`, ts.URL+"/Calc/Fail")
	assert.Equal(t, 400, status)
	assert.Equal(t, connectError{"failed_precondition", "the sum is odd"}, e)

	status, e = curlError(t, "-d", `{"a":`, ts.URL+"/Calc/Add")
	assert.Equal(t, 400, status)
	assert.Equal(t, "invalid_argument", e.Code)

	status, e = curlError(t, "-d", `{}`, ts.URL+"/Calc/Nope")
	assert.Equal(t, 404, status)
	assert.Equal(t, connectError{"not_found", "rpc: can't find method Calc.Nope"}, e)

	status, e = curlError(t, "-d", `{}`, ts.URL+"/Calc/Panic")
	assert.Equal(t, 500, status)
	assert.Equal(t, connectError{"internal", "dispatch: panic in Calc.Panic: boom"}, e)

	// --fail-with-body: curl's exit code says the call failed, and the
	// body says why.
	out, exit := curl(t, "--fail-with-body", "-H", "Content-Type: application/json", "-d", `{}`, ts.URL+"/Calc/Fail")
	assert.Equal(t, 22, exit)
	assert.JSONEq(t, `{"code":"failed_precondition","message":"the sum is odd"}`, out)
}

func TestCurlDeadline(t *testing.T) {
	srv := dispatch.NewServer()
	c := newCalc(t, srv)
	ts := serve(t, srv)
	status, e := curlError(t, "-H", "Connect-Timeout-Ms: 100", "-d", `{}`, ts.URL+"/Calc/Slow")
	assert.Equal(t, 504, status)
	assert.Equal(t, "deadline_exceeded", e.Code)
	// curl has no deadline of its own: the handler's context ended at the
	// one the header gave.
	assert.ErrorIs(t, recv(t, c.ended, "the handler's end"), context.DeadlineExceeded)
	assert.True(t, c.seen().hasDeadline)
}

// envelope frames one message of a Connect stream: flags, length, body.
func envelope(flags byte, body string) []byte {
	b := []byte{flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(body)))
	return append(b, body...)
}

func TestCurlServerStream(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	req := filepath.Join(t.TempDir(), "request")
	require.NoError(t, os.WriteFile(req, envelope(0, `{"a":3}`), 0o600))
	out, exit := curl(t, "--fail-with-body", "-H", "Content-Type: application/connect+json", "--data-binary", "@"+req, ts.URL+"/Calc/Count")
	require.Zero(t, exit, out)

	// The messages, then the end of the stream (flags 2) with the trailers.
	rest := []byte(out)
	var msgs []string
	var end []byte
	for len(rest) > 0 {
		require.GreaterOrEqual(t, len(rest), 5, "a truncated envelope: %q", rest)
		n := int(binary.BigEndian.Uint32(rest[1:5]))
		require.GreaterOrEqual(t, len(rest), 5+n)
		body := rest[5 : 5+n]
		if rest[0]&2 != 0 {
			end = body
		} else {
			msgs = append(msgs, string(body))
		}
		rest = rest[5+n:]
	}
	assert.Equal(t, []string{"1", "2", "3"}, msgs)
	// Header names go canonical, as http.Header has them.
	assert.JSONEq(t, `{"metadata":{"Counted":["yes"]}}`, string(end))
}

// TestCurlRefusals: every refusal carries a Connect error body that says
// what to send instead: those connect-go gives with a bare status (405, an
// HTTP method other than POST; 415, a Content-Type it does not serve),
// keeping its Allow and Accept-Post headers, and a plain POST of JSON to a
// streaming method, refused in HTTP's terms.
func TestCurlRefusals(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv)
	for _, tc := range []struct {
		args   []string
		status int
		header string // a header the answer keeps
		want   connectError
	}{
		{[]string{"-X", "GET", "/Calc/Add"}, 405, "Allow: POST",
			connectError{"unimplemented", "httpzerodial: Calc.Add is called with POST, not GET"}},
		{[]string{"-X", "PUT", "-H", "Content-Type: application/json", "-d", "{}", "/Calc/Count"}, 405, "Allow: POST",
			connectError{"unimplemented", "httpzerodial: Calc.Count is called with POST, not PUT"}},
		{[]string{"-H", "Content-Type: text/plain", "-d", "{}", "/Calc/Add"}, 415, "Accept-Post: ",
			connectError{"unimplemented", `httpzerodial: Calc.Add does not take Content-Type "text/plain"; POST its arguments as application/json (or application/msgpack), or call it with gRPC or gRPC-Web, application/grpc+json (or +msgpack)`}},
		{[]string{"-H", "Content-Type: application/xml", "-d", "{}", "/Calc/Count"}, 415, "Accept-Post: ",
			connectError{"unimplemented", `httpzerodial: Calc.Count does not take Content-Type "application/xml"; POST its messages as a Connect stream, application/connect+json (or +msgpack), or open it with gRPC or gRPC-Web, application/grpc+json (or +msgpack)`}},
		{[]string{"-H", "Content-Type: application/grpc+xml", "-d", "{}", "/Calc/Add"}, 415, "Accept-Post: ",
			connectError{"unimplemented", `httpzerodial: Calc.Add does not take Content-Type "application/grpc+xml"; POST its arguments as application/json (or application/msgpack), or call it with gRPC or gRPC-Web, application/grpc+json (or +msgpack)`}},
		{[]string{"-H", "Content-Type: application/json", "-d", `{"a":3}`, "/Calc/Count"}, 400, "",
			connectError{"invalid_argument", "httpzerodial: Calc.Count is a streaming method; POST its message as a Connect stream, Content-Type application/connect+json," +
				" the message after a 5-byte prefix: a zero byte, then its length in 4 bytes, big-endian (as `zerodial stream` does)"}},
	} {
		versions := []string{"--http1.1"}
		if !slices.Contains(tc.args, "-d") {
			// Over HTTP/2, an answer given before a request's body is
			// read is followed by a reset of the stream (NO_ERROR), which
			// curl 7.88 may take for a failure of the transfer:
			// TestWrongContentType has net/http's client read these
			// answers over h2c.
			versions = append(versions, "--http2-prior-knowledge")
		}
		for _, version := range versions {
			args := append([]string{version, "--include", "--write-out", "\n%{http_code}"}, tc.args...)
			args[len(args)-1] = ts.URL + args[len(args)-1]
			out, exit := curl(t, args...)
			require.Zero(t, exit, "%s %v: %s", version, tc.args, out)
			head, rest, _ := bytes.Cut([]byte(out), []byte("\r\n\r\n"))
			body, status, _ := bytes.Cut(rest, []byte("\n"))
			assert.Equal(t, strconv.Itoa(tc.status), string(status), "%v", tc.args)
			var e connectError
			if assert.NoError(t, json.Unmarshal(body, &e), "%v: body %q", tc.args, body) {
				assert.Equal(t, tc.want, e, "%v", tc.args)
			}
			head = bytes.ToLower(head)
			assert.Contains(t, string(head), "content-type: application/json", "%v", tc.args)
			assert.Contains(t, string(head), strings.ToLower(tc.header), "%v", tc.args)
		}
	}
}
