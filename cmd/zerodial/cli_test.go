package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

type Args struct{ A, B int }

type Customer struct {
	Name string
	Tags []string
}

type Item struct {
	SKU string
	Qty int
}

// Order has what a reply may hold: nested structs, slices of them, ints,
// floats, strings, bools and a pointer.
type Order struct {
	ID       int64
	Customer Customer
	Items    []Item
	Price    float64
	Paid     bool
	Note     *string
}

// Blob holds bytes, which JSON prints in base64.
type Blob struct{ Data []byte }

// Files holds bytes in a nested struct, through a pointer and in a slice,
// beside a string.
type Files struct {
	Main *Blob
	More []Blob
	Name string
}

type Count struct{ N int }

type Tick struct{ I int }

// service returns a Server with the methods the tests call.
func service(t *testing.T) *dispatch.Server {
	t.Helper()
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *Args, r *int) error {
		*r = a.A + a.B
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Shop.Echo", func(ctx context.Context, o *Order, r *Order) error {
		*r = *o
		r.ID++ // proves the handler saw the ID as a number
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Shop.Names", func(ctx context.Context, n *int, r *map[int]string) error {
		*r = map[int]string{}
		for i := range *n {
			(*r)[i+1] = strings.Repeat("x", i+1)
		}
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Shop.Blob", func(ctx context.Context, s *string, r *Blob) error {
		r.Data = []byte(*s)
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Shop.Unblob", func(ctx context.Context, b *Files, r *[]string) error {
		*r = []string{""}
		if b.Main != nil {
			(*r)[0] = string(b.Main.Data)
		}
		for _, f := range b.More {
			*r = append(*r, string(f.Data))
		}
		*r = append(*r, b.Name)
		return nil
	}))
	require.NoError(t, dispatch.Handle(srv, "Calc.Fail", func(ctx context.Context, a *Args, r *int) error {
		return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "not yours\nto add"}
	}))
	require.NoError(t, dispatch.Handle(srv, "Calc.Slow", func(ctx context.Context, a *Args, r *int) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	require.NoError(t, dispatch.Handle(srv, "Meta.Get", func(ctx context.Context, key *string, r *string) error {
		*r, _ = dispatch.MetadataValue(ctx, *key)
		return nil
	}))
	require.NoError(t, dispatch.HandleStream(srv, "Ticks.Count", func(ctx context.Context, s *dispatch.ServerStream[Count, Tick]) error {
		var n int
		for c, err := range s.Recv() {
			if err != nil {
				return err
			}
			n = c.N
		}
		for i := range n {
			if err := s.Send(&Tick{I: i}); err != nil {
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
	require.NoError(t, describe.Register(srv))
	return srv
}

// serve serves srv on a loopback listener of tr until the test ends.
func serve(t *testing.T, srv *dispatch.Server, tr transport.Transport) string {
	t.Helper()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() {
		srv.Close()
		tr.Close()
	})
	return l.Addr().String()
}

// result is what a run of the command gave.
type result struct {
	stdout, stderr string
	code           int
}

// zd runs the built command with args.
func zd(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return r
}

// certFiles writes the certificate and key of cfg's first certificate as
// PEM files, and returns their paths.
func certFiles(t *testing.T, cfg *tls.Config) (certFile, keyFile string) {
	t.Helper()
	pair := cfg.Certificates[0]
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := x509.MarshalPKCS8PrivateKey(pair.PrivateKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pair.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600))
	return certFile, keyFile
}

// path is a server reached one way, and the flags that reach it.
type path struct {
	name  string
	flags []string
	addr  string
}

// paths starts one Server on each path the zerodial wire offers.
func paths(t *testing.T) []path {
	tlsServer, _, err := testcert.Make(false)
	require.NoError(t, err)
	caFile, _ := certFiles(t, tlsServer)
	mtlsServer, _, err := testcert.Make(true)
	require.NoError(t, err)
	mCert, mKey := certFiles(t, mtlsServer)
	return []path{
		{"tcp", []string{"-transport", "tcp"}, serve(t, service(t), tcp.New())},
		{"tcp-tls", []string{"-transport", "tcp", "-cacert", caFile}, serve(t, service(t), tcp.New(tcp.WithTLS(tlsServer)))},
		{"mux", nil, serve(t, service(t), mux.New())},
		{"mux-tls", []string{"-transport", "mux", "-tls", "-cacert", caFile}, serve(t, service(t), mux.New(mux.WithTLS(tlsServer)))},
		{"mux-mtls", []string{"-cacert", mCert, "-cert", mCert, "-key", mKey}, serve(t, service(t), mux.New(mux.WithTLS(mtlsServer)))},
	}
}

func (p path) run(t *testing.T, cmd string, args ...string) result {
	t.Helper()
	all := append(append([]string{cmd}, p.flags...), p.addr)
	return zd(t, append(all, args...)...)
}

// requireJSON checks that got is one line of JSON equal to want.
func requireJSON(t *testing.T, want string, got result) {
	t.Helper()
	require.Equal(t, 0, got.code, "stderr: %s", got.stderr)
	assert.Empty(t, got.stderr)
	require.True(t, strings.HasSuffix(got.stdout, "\n") && strings.Count(got.stdout, "\n") == 1, "one line: %q", got.stdout)
	assert.JSONEq(t, want, got.stdout)
}

func TestWire(t *testing.T) {
	for _, p := range paths(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Run("call", func(t *testing.T) {
				requireJSON(t, `9`, p.run(t, "call", "Calc.Add", `{"A": 2, "B": 7}`))
				requireJSON(t, `9`, p.run(t, "call", "Calc.Add", `{"A": 2.0, "B": 0.7e1}`))
			})
			t.Run("shapes", func(t *testing.T) {
				order := `{"ID": 41, "Customer": {"Name": "Ada", "Tags": ["a", "b"]},
					"Items": [{"SKU": "x-1", "Qty": 3}, {"SKU": "y-2", "Qty": -4}],
					"Price": 2.5, "Paid": true, "Note": "by the door"}`
				want := strings.Replace(order, `"ID": 41`, `"ID": 42`, 1)
				requireJSON(t, want, p.run(t, "call", "Shop.Echo", order))
				// Absent fields arrive zero; a nil pointer comes back null.
				requireJSON(t, `{"ID": 1, "Customer": {"Name": "", "Tags": null}, "Items": null,
					"Price": 0, "Paid": false, "Note": null}`, p.run(t, "call", "Shop.Echo", `{"Price": 0}`))
			})
			t.Run("int-keys", func(t *testing.T) {
				requireJSON(t, `{"1": "x", "2": "xx"}`, p.run(t, "call", "Shop.Names", `2`))
				requireJSON(t, `{}`, p.run(t, "call", "Shop.Names", "--", `-1`)) // "--" ends the flags
			})
			t.Run("bytes", func(t *testing.T) {
				requireJSON(t, `{"Data": "aGk="}`, p.run(t, "call", "Shop.Blob", `"hi"`))
			})
			t.Run("bytes-args", func(t *testing.T) {
				// A []byte field given as a JSON string is base64, as over
				// HTTP (encoding/json); a string field is the string.
				requireJSON(t, `["hi", "yo", "", "aGk="]`, p.run(t, "call", "Shop.Unblob",
					`{"Main": {"Data": "aGk="}, "More": [{"Data": "eW8="}, {"Data": null}], "Name": "aGk="}`))
				r := p.run(t, "call", "Shop.Unblob", `{"More": [{"Data": "hi!"}]}`)
				assert.Equal(t, 2, r.code, r.stderr)
				assert.Equal(t, "zerodial: the []byte field of More[0].Data is not base64, as JSON gives bytes: illegal base64 data at input byte 2\n", r.stderr)
			})
			t.Run("metadata", func(t *testing.T) {
				requireJSON(t, `"ada"`, p.run(t, "call", "-H", "x-user: ada", "Meta.Get", `"x-user"`))
			})
			t.Run("handler-error", func(t *testing.T) {
				r := p.run(t, "call", "Calc.Fail", `{}`)
				assert.Equal(t, 1, r.code)
				assert.Empty(t, r.stdout)
				assert.Equal(t, "permission_denied: not yours to add\n", r.stderr)
			})
			t.Run("no-method", func(t *testing.T) {
				r := p.run(t, "call", "Calc.Nope", `{}`)
				assert.Equal(t, 1, r.code)
				assert.True(t, strings.HasPrefix(r.stderr, "not_found: "), r.stderr)
				assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
			})
			t.Run("wrong-args", func(t *testing.T) {
				r := p.run(t, "call", "Calc.Add", `{"X": 1}`)
				assert.Equal(t, 1, r.code)
				assert.True(t, strings.HasPrefix(r.stderr, "invalid_argument: "), r.stderr)
			})
			t.Run("deadline", func(t *testing.T) {
				r := p.run(t, "call", "-timeout", "300ms", "Calc.Slow", `{}`)
				assert.Equal(t, 4, r.code, r.stderr)
				assert.True(t, strings.HasPrefix(r.stderr, "deadline_exceeded: "), r.stderr)
			})
			t.Run("stream", func(t *testing.T) {
				r := p.run(t, "stream", "Ticks.Count", `{"N": 3}`)
				require.Equal(t, 0, r.code, r.stderr)
				assert.Equal(t, "{\"I\":0}\n{\"I\":1}\n{\"I\":2}\n", r.stdout)
				r = p.run(t, "stream", "Ticks.Count", `{"N": -1}`)
				assert.Equal(t, 1, r.code)
				assert.Equal(t, "out_of_range: negative count\n", r.stderr)
			})
			t.Run("health", func(t *testing.T) {
				r := p.run(t, "health")
				assert.Equal(t, result{stdout: "SERVING\n"}, r)
				r = p.run(t, "health", "down")
				assert.Equal(t, result{stdout: "NOT_SERVING\n", code: 1}, r)
				r = p.run(t, "health", "nobody")
				assert.Equal(t, 1, r.code)
				assert.Equal(t, "not_found: health: unknown service nobody\n", r.stderr)
			})
			t.Run("list", func(t *testing.T) {
				r := p.run(t, "list")
				require.Equal(t, 0, r.code, r.stderr)
				assert.Empty(t, r.stderr)
				assert.Equal(t, wantList, r.stdout)
			})
		})
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"call"},
		{"call", "127.0.0.1:1"},
		{"call", "127.0.0.1:1", "NoDot", "{}"},
		{"call", "127.0.0.1:1", "Calc.Add", "{"},
		{"call", "127.0.0.1:1", "Calc.Add", "{} {}"},
		{"call", "-transport", "udp", "127.0.0.1:1", "Calc.Add"},
		{"call", "-cert", "c.pem", "127.0.0.1:1", "Calc.Add"},
		{"call", "-nosuchflag", "127.0.0.1:1", "Calc.Add"},
		{"call", "-tls", "http://127.0.0.1:1", "Calc.Add"},
		{"call", "-cacert", "/nonexistent/ca.pem", "127.0.0.1:1", "Calc.Add"},
		{"call", "-H", "no colon", "127.0.0.1:1", "Calc.Add"},
		{"call", "-timeout", "soon", "127.0.0.1:1", "Calc.Add"},
	} {
		r := zd(t, args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Empty(t, r.stdout, "%v", args)
		assert.NotEmpty(t, r.stderr, "%v", args)
		if len(args) > 1 { // past the usage printed for no command or an unknown one
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "%v: one line: %q", args, r.stderr)
		}
	}
	r := zd(t, "help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "zerodial call")
	r = zd(t, "stream", "-h")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "usage: zerodial stream [flags] ADDR Service.Method [JSON]")
	assert.Contains(t, r.stdout, "-cacert")
	assert.Empty(t, r.stderr)
}

func TestCannotConnect(t *testing.T) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nobody listens there now
	for _, args := range [][]string{
		{"call", "-transport", "tcp", addr, "Calc.Add", "{}"},
		{"call", addr, "Calc.Add", "{}"},
		{"health", addr},
		{"call", "http://" + addr, "Calc.Add", "{}"},
	} {
		r := zd(t, args...)
		assert.Equal(t, 3, r.code, "%v: %s", args, r.stderr)
		assert.True(t, strings.HasPrefix(r.stderr, "zerodial: ") && strings.Count(r.stderr, "\n") == 1, "%v: %q", args, r.stderr)
		assert.Contains(t, r.stderr, "refused", "%v", args)
	}
}

// A server that asks for a client certificate turns away a command
// without one; one that trusts another CA is refused by the command.
func TestTLSRefused(t *testing.T) {
	mtlsServer, _, err := testcert.Make(true)
	require.NoError(t, err)
	cert, _ := certFiles(t, mtlsServer)
	addr := serve(t, service(t), mux.New(mux.WithTLS(mtlsServer)))
	r := zd(t, "call", "-cacert", cert, addr, "Calc.Add", `{"A": 1}`)
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Contains(t, r.stderr, "certificate")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)

	other, _, err := testcert.Make(false)
	require.NoError(t, err)
	otherCA, _ := certFiles(t, other)
	tlsServer, _, err := testcert.Make(false)
	require.NoError(t, err)
	addr = serve(t, service(t), mux.New(mux.WithTLS(tlsServer)))
	r = zd(t, "call", "-cacert", otherCA, addr, "Calc.Add", `{"A": 1}`)
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Contains(t, r.stderr, "certificate")
}

// The JSON conversions, without a server: numbers keep their kind, and
// the maps of any keys print.
func TestJSONValues(t *testing.T) {
	v, err := fromJSON([]byte(`{"i": 3, "neg": -3, "big": 18446744073709551615, "f": 2.5, "e": 1e3, "s": ["a", 1], "huge": 1e300}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"i": int64(3), "neg": int64(-3), "big": uint64(18446744073709551615),
		"f": 2.5, "e": int64(1000), "s": []any{"a", int64(1)}, "huge": 1e300}, v)
	_, err = fromJSON([]byte(``))
	assert.Error(t, err)
	_, err = fromJSON([]byte(`1 2`))
	assert.Error(t, err)
	_, err = toJSON([]byte{0xc1}) // never used in msgpack
	assert.Error(t, err)
	out, err := json.Marshal(jsonable(map[any]any{int8(1): map[any]any{true: []any{map[any]any{"k": 1}}}}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"1": {"true": [{"k": 1}]}}`, string(out))
}

// A stream that does not end is followed until the command is
// interrupted, its messages printed as they come.
func TestStreamFollow(t *testing.T) {
	addr := serve(t, service(t), mux.New())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, "stream", addr, "Health.Watch", `{"Service": ""}`)
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
}

// wantList is what list prints for service's Server, on every path.
const wantList = `Calc.Add(main.Args) integer
Calc.Fail(main.Args) integer
Calc.Slow(main.Args) integer
Describe.Methods(describe.Request) describe.Description
Health.Check(health.CheckRequest) health.CheckResponse
Health.Watch(health.CheckRequest) stream health.CheckResponse
Meta.Get(string) string
Shop.Blob(string) main.Blob
Shop.Echo(main.Order) main.Order
Shop.Names(integer) map[string]string
Shop.Unblob(main.Files) []string
Ticks.Count(main.Count) stream main.Tick

describe.Description {$defs map[string]map[string]any, methods []describe.MethodDescription}
describe.MethodDescription {args map[string]any, encoding *dispatch.Encoding, name string, reply map[string]any, stream boolean}
describe.Request {}
dispatch.Encoding {args string, name string, origin string, reply string}
health.CheckRequest {Service string}
health.CheckResponse {Status string}
main.Args {A integer, B integer}
main.Blob {Data bytes}
main.Count {N integer}
main.Customer {Name string, Tags []string}
main.Files {Main *main.Blob, More []main.Blob, Name string}
main.Item {Qty integer, SKU string}
main.Order {Customer main.Customer, ID integer, Items []main.Item, Note *string, Paid boolean, Price number}
main.Tick {I integer}
`

// A Server that does not describe itself answers list over tcp and mux
// with not_found, and the command says how to make it.
func TestListNotDescribed(t *testing.T) {
	for _, p := range []struct {
		flags []string
		tr    transport.Transport
	}{
		{[]string{"-transport", "tcp"}, tcp.New()},
		{nil, mux.New()},
	} {
		srv := dispatch.NewServer()
		require.NoError(t, dispatch.Handle(srv, "Calc.Add", func(ctx context.Context, a *Args, r *int) error { return nil }))
		addr := serve(t, srv, p.tr)
		r := zd(t, append(append([]string{"list"}, p.flags...), addr)...)
		assert.Equal(t, 1, r.code, r.stderr)
		assert.Empty(t, r.stdout)
		assert.Equal(t, "not_found: rpc: can't find service Describe.Methods (the server does not describe itself: "+
			"it must call describe.Register(srv), package github.com/zerodial/transport/describe)\n", r.stderr)
	}
}

// A method of that name answering something else is not taken for a
// description.
func TestListNotADescription(t *testing.T) {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, describe.Method, func(ctx context.Context, a *describe.Request, r *string) error {
		*r = "hello"
		return nil
	}))
	r := zd(t, "list", serve(t, srv, mux.New()))
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Equal(t, "zerodial: Describe.Methods answered \"hello\", not a description of methods\n", r.stderr)
}

// A URL whose port speaks zerodial's wire, not HTTP: the command says so,
// and how to call it, where it said "EOF" (the listener hangs up on an
// HTTP request).
func TestHTTPURLOfWirePort(t *testing.T) {
	for _, tr := range []transport.Transport{tcp.New(), mux.New()} {
		addr := serve(t, service(t), tr)
		for _, args := range [][]string{
			{"list", "http://" + addr},
			{"call", "http://" + addr, "Calc.Add", "{}"},
		} {
			r := zd(t, args...)
			assert.Equal(t, 3, r.code, "%v: %s", args, r.stderr)
			assert.True(t, strings.HasPrefix(r.stderr, "zerodial: "+addr+" speaks zerodial's "+tr.String()+" wire, not HTTP: give "+addr+
				" (with -transport "+tr.String()+") rather than the URL ("), "%v: %q", args, r.stderr)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		}
	}
}
