package httpzerodial_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/httpzerodial"
)

// The command-line client (../cmd/zerodial, a module of its own) calls over
// HTTP through this package's Client (Dial); these tests run the built
// command against this package's Handler and Describe, so that what it
// speaks is proved against the real server.

// cliCommand builds ../cmd/zerodial for the tests that run it, into a
// directory removed when t ends.
func cliCommand(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zerodial")
	build := exec.Command("go", "build", "-o", path, ".")
	build.Dir = "../cmd/zerodial"
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return path
}

type cliItem struct {
	SKU string
	Qty int
}

type cliOrder struct {
	ID       int64
	Customer struct {
		Name string
		Tags []string
	}
	Items []cliItem
	Price float64
}

type cliCount struct{ N int }

type cliTick struct{ I int }

// cliService returns a Server with the methods the command calls.
func cliService(t *testing.T) *dispatch.Server {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Shop.Echo", func(ctx context.Context, o *cliOrder, r *cliOrder) error {
		*r = *o
		r.ID++
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Shop.Fail", func(ctx context.Context, o *cliOrder, r *cliOrder) error {
		return &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "closed for the day"}
	}))
	require.NoError(t, dispatch.Handle(srv, "Shop.Slow", func(ctx context.Context, o *cliOrder, r *cliOrder) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	require.NoError(t, dispatch.Handle(srv, "Meta.Get", func(ctx context.Context, key *string, r *string) error {
		*r, _ = dispatch.MetadataValue(ctx, *key)
		return nil
	}))
	require.NoError(t, dispatch.HandleStream(srv, "Ticks.Count", func(ctx context.Context, s *dispatch.ServerStream[cliCount, cliTick]) error {
		var n int
		for c, err := range s.Recv() {
			if err != nil {
				return err
			}
			n = c.N
		}
		for i := range max(n, 1) {
			if err := s.Send(&cliTick{I: i}); err != nil {
				return err
			}
		}
		if n < 0 {
			return &dispatch.Error{Code: dispatch.CodeOutOfRange, Message: "negative count"}
		}
		return nil
	}))
	h := health.NewServer()
	h.SetServingStatus("down", health.NotServing)
	require.NoError(t, h.Register(srv))
	return srv
}

// cliServer serves srv's methods at "/" and their description at
// "/describe", over HTTP or HTTPS; with HTTPS it returns a PEM file of the
// server's certificate too.
func cliServer(t *testing.T, srv *dispatch.Server, https bool) (url, caFile string) {
	mux := http.NewServeMux()
	mux.Handle("/", httpzerodial.NewHandler(srv))
	mux.Handle("/describe", httpzerodial.Describe(srv))
	ts := httptest.NewUnstartedServer(mux)
	if https {
		ts.EnableHTTP2 = true
		ts.StartTLS()
		caFile = filepath.Join(t.TempDir(), "ca.pem")
		require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	} else {
		ts.Config.Protocols = httpzerodial.Protocols()
		ts.Start()
	}
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts.URL, caFile
}

type cliResult struct {
	stdout, stderr string
	code           int
}

func runCLI(t *testing.T, command string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return r
}

func TestCLI(t *testing.T) {
	command := cliCommand(t)
	plain, _ := cliServer(t, cliService(t), false)
	secure, ca := cliServer(t, cliService(t), true)
	for _, p := range []struct {
		name  string
		addr  string
		flags []string
	}{
		{"http", plain, nil},
		{"http-transport-flag", strings.TrimPrefix(plain, "http://"), []string{"-transport", "http"}},
		{"https", secure, []string{"-cacert", ca}},
	} {
		run := func(cmd string, args ...string) cliResult {
			return runCLI(t, command, append(append(append([]string{cmd}, p.flags...), p.addr), args...)...)
		}
		t.Run(p.name, func(t *testing.T) {
			t.Run("call", func(t *testing.T) {
				order := `{"ID": 41, "Customer": {"Name": "Ada", "Tags": ["a", "b"]},
					"Items": [{"SKU": "x-1", "Qty": 3}], "Price": 2.5}`
				r := run("call", "Shop.Echo", order)
				require.Equal(t, 0, r.code, r.stderr)
				assert.Equal(t, 1, strings.Count(r.stdout, "\n"))
				assert.JSONEq(t, strings.Replace(order, "41", "42", 1), r.stdout)
			})
			t.Run("metadata", func(t *testing.T) {
				r := run("call", "-H", "X-User: ada", "Meta.Get", `"x-user"`)
				assert.Equal(t, cliResult{stdout: "\"ada\"\n"}, r)
			})
			t.Run("errors", func(t *testing.T) {
				r := run("call", "Shop.Fail", `{}`)
				assert.Equal(t, cliResult{stderr: "failed_precondition: closed for the day\n", code: 1}, r)
				r = run("call", "Shop.Nope", `{}`)
				assert.Equal(t, 1, r.code)
				assert.True(t, strings.HasPrefix(r.stderr, "not_found: ") || strings.HasPrefix(r.stderr, "unimplemented: "), r.stderr)
				r = run("call", "-timeout", "300ms", "Shop.Slow", `{}`)
				assert.Equal(t, 4, r.code, r.stderr)
				assert.True(t, strings.HasPrefix(r.stderr, "deadline_exceeded: "), r.stderr)
			})
			t.Run("stream", func(t *testing.T) {
				r := run("stream", "Ticks.Count", `{"N": 3}`)
				assert.Equal(t, cliResult{stdout: "{\"I\":0}\n{\"I\":1}\n{\"I\":2}\n"}, r)
				r = run("stream", "Ticks.Count", `{"N": -1}`)
				assert.Equal(t, cliResult{stdout: "{\"I\":0}\n", stderr: "out_of_range: negative count\n", code: 1}, r)
			})
			t.Run("health", func(t *testing.T) {
				assert.Equal(t, cliResult{stdout: "SERVING\n"}, run("health"))
				assert.Equal(t, cliResult{stdout: "NOT_SERVING\n", code: 1}, run("health", "down"))
				r := run("health", "nobody")
				assert.Equal(t, cliResult{stderr: "not_found: health: unknown service nobody\n", code: 1}, r)
			})
			t.Run("list", func(t *testing.T) {
				r := run("list")
				require.Equal(t, 0, r.code, r.stderr)
				for _, line := range []string{
					"Shop.Echo(httpzerodial_test.cliOrder) httpzerodial_test.cliOrder\n",
					"Ticks.Count(httpzerodial_test.cliCount) stream httpzerodial_test.cliTick\n",
					"Meta.Get(string) string\n",
					"Health.Check(health.CheckRequest) health.CheckResponse\n",
					"\nhttpzerodial_test.cliOrder {Customer {Name string, Tags []string}, ID integer, Items []httpzerodial_test.cliItem, Price number}\n",
				} {
					assert.Contains(t, r.stdout, line)
				}
				r = run("list", "-describe", "/nothing")
				assert.Equal(t, 1, r.code)
				assert.Contains(t, r.stderr, "not a description of methods")
			})
		})
	}
	t.Run("https-untrusted", func(t *testing.T) {
		r := runCLI(t, command, "call", secure, "Shop.Echo", `{}`)
		assert.Equal(t, 3, r.code, r.stderr)
		assert.Contains(t, r.stderr, "certificate")
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
	})
	// A stream that does not end is followed, each message printed as it
	// comes, until the command is interrupted.
	t.Run("stream-follow", func(t *testing.T) {
		url, _ := cliServer(t, cliService(t), false)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, command, "stream", url, "Health.Watch", `{"Service": ""}`)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		assert.JSONEq(t, `{"Status": "SERVING"}`, line)
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		err = cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 130, exit.ExitCode())
		assert.Empty(t, errOut.String())
	})
}

// TestFollowStreamOneLine: docs/http.md's one-line ways of following a
// server stream over HTTP, run as they are written there, through sh: the
// command-line client, and curl with the message's 5-byte envelope made by
// printf.
func TestFollowStreamOneLine(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	url, _ := cliServer(t, cliService(t), false)
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		require.NoError(t, err, "%s: %s", line, errOut.String())
		return string(out)
	}
	// docs/http.md's lines, with the test server's URL.
	doc := func(line string) string { return strings.ReplaceAll(line, "http://127.0.0.1:8080", url) }
	t.Run("zerodial", func(t *testing.T) {
		line := doc(`zerodial stream http://127.0.0.1:8080 Ticks.Count '{"N":2}'`)
		out := run(strings.Replace(line, "zerodial", cliCommand(t), 1))
		assert.Equal(t, "{\"I\":0}\n{\"I\":1}\n", out)
	})
	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("no curl binary on this machine")
		}
		out := run(doc(`printf '\0\0\0\0\7{"N":2}' | curl -sN -H 'Content-Type: application/connect+json' --data-binary @- http://127.0.0.1:8080/Ticks/Count | cat -v`))
		assert.Equal(t, `^@^@^@^@^G{"I":0}^@^@^@^@^G{"I":1}^B^@^@^@^B{}`, out)
	})
}
