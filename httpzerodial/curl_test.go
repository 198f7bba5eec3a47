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
