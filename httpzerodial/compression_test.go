package httpzerodial_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	grpcgzip "google.golang.org/grpc/encoding/gzip"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
)

// Compression is the protocols' own: gzip, which the Handler takes and
// gives as connect-go's handlers do by default, its decompression stopped
// past the read limit. These tests look at the bytes on the wire, with
// each kind of client: connect-go's over Connect, gRPC and gRPC-Web,
// grpc-go's, and curl.

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// wire is what one exchange looked like on the wire, seen from its client
// (wireRecorder) or its server (wireServer): the headers both ways and the
// first bytes of both bodies.
type wire struct {
	mu                 sync.Mutex
	reqHeader, header  http.Header
	reqStart, resStart []byte
}

func (w *wire) get() (reqHeader, header http.Header, reqStart, resStart []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reqHeader, w.header, w.reqStart, w.resStart
}

// wireRecorder is an http.RoundTripper that records an exchange of a
// unary call: it reads the whole request body (a unary call's is one
// message), and keeps the first bytes of the response body as the client
// reads them.
type wireRecorder struct {
	next http.RoundTripper
	wire
}

func (r *wireRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	res, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.reqHeader, r.header = req.Header.Clone(), res.Header.Clone()
	r.reqStart = body[:min(len(body), 16)]
	r.mu.Unlock()
	res.Body = &startBody{ReadCloser: res.Body, mu: &r.mu, start: &r.resStart}
	return res, nil
}

// startBody keeps the first 16 bytes read of a body in *start, under mu.
type startBody struct {
	io.ReadCloser
	mu    *sync.Mutex
	start *[]byte
}

func (b *startBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	if k := min(n, 16-len(*b.start)); k > 0 {
		*b.start = append(*b.start, p[:k]...)
	}
	b.mu.Unlock()
	return n, err
}

// recordingClient returns an HTTP client as httpClient does, whose
// exchanges rec records.
func recordingClient(t *testing.T, h2 bool) (*http.Client, *wireRecorder) {
	hc := httpClient(t, h2)
	rec := &wireRecorder{next: hc.Transport}
	return &http.Client{Transport: rec}, rec
}

// envelopeHead reads a gRPC envelope's first bytes: its flags (1:
// compressed) and its length.
func envelopeHead(t *testing.T, start []byte) (flags byte, size uint32) {
	t.Helper()
	require.GreaterOrEqual(t, len(start), 5, "an envelope: % x", start)
	return start[0], binary.BigEndian.Uint32(start[1:5])
}

// TestCompressionConnectClient: connect-go's client sending gzip
// (WithSendGzip) over Connect, gRPC and gRPC-Web sends its request
// compressed, and the Handler's answer comes back compressed, in the
// protocol's own headers and framing.
func TestCompressionConnectClient(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			newCalc(t, srv)
			ts := serve(t, srv)
			hc, rec := recordingClient(t, p.h2)
			opts := []connect.ClientOption{connect.WithCodec(jsonCodec{}), connect.WithSendGzip()}
			if p.option != nil {
				opts = append(opts, p.option)
			}
			add := connect.NewClient[Pair, int](hc, ts.URL+"/Calc/Add", opts...)
			res, err := add.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 20, B: 22}))
			require.NoError(t, err)
			assert.Equal(t, 42, *res.Msg)

			reqHeader, header, reqStart, resStart := rec.get()
			if strings.HasPrefix(p.name, "connect/") {
				// A unary Connect call is a plain POST: HTTP's own
				// Content-Encoding, the body a gzip stream.
				assert.Equal(t, "gzip", reqHeader.Get("Content-Encoding"))
				assert.Equal(t, "gzip", header.Get("Content-Encoding"))
				assert.True(t, bytes.HasPrefix(reqStart, gzipMagic), "request body % x", reqStart)
				assert.True(t, bytes.HasPrefix(resStart, gzipMagic), "response body % x", resStart)
				return
			}
			// gRPC and gRPC-Web: Grpc-Encoding, and each message's
			// envelope flagged compressed around a gzip stream.
			assert.Equal(t, "gzip", reqHeader.Get("Grpc-Encoding"))
			assert.Equal(t, "gzip", header.Get("Grpc-Encoding"))
			for what, start := range map[string][]byte{"request": reqStart, "response": resStart} {
				flags, _ := envelopeHead(t, start)
				assert.Equal(t, byte(1), flags&1, "%s envelope not flagged compressed: % x", what, start)
				assert.True(t, bytes.HasPrefix(start[5:], gzipMagic), "%s message % x", what, start)
			}
		})
	}
}

// wireServer serves h on a loopback server speaking HTTP/1.1 and h2c, and
// records what it sees of the last request and writes of its answer.
func wireServer(t *testing.T, h http.Handler) (*httptest.Server, *wire) {
	w := new(wire)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var mu sync.Mutex
		var reqStart []byte
		r.Body = &startBody{ReadCloser: r.Body, mu: &mu, start: &reqStart}
		out := &startWriter{ResponseWriter: rw}
		h.ServeHTTP(out, r)
		mu.Lock()
		defer mu.Unlock()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.reqHeader, w.header = r.Header.Clone(), rw.Header().Clone()
		w.reqStart, w.resStart = reqStart, out.start
	}))
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, w
}

// startWriter keeps the first 16 bytes a handler writes. It passes Flush
// on, which connect-go's streaming and gRPC answers need.
type startWriter struct {
	http.ResponseWriter
	start []byte
}

func (w *startWriter) Write(p []byte) (int, error) {
	if k := min(len(p), 16-len(w.start)); k > 0 {
		w.start = append(w.start, p[:k]...)
	}
	return w.ResponseWriter.Write(p)
}

func (w *startWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *startWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestCompressionGRPCGoClient: grpc-go's client with its gzip compressor
// sends a compressed request, and, since it advertises gzip in
// grpc-accept-encoding, the answer comes back compressed.
func TestCompressionGRPCGoClient(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	t.Cleanup(func() { srv.Close() })
	ts, w := wireServer(t, httpzerodial.NewHandler(srv))
	conn := grpcConn(t, ts.URL)

	var reply int
	require.NoError(t, conn.Invoke(context.Background(), "/Calc/Add", &Pair{A: 20, B: 22}, &reply, grpc.UseCompressor(grpcgzip.Name)))
	assert.Equal(t, 42, reply)

	reqHeader, header, reqStart, resStart := w.get()
	assert.Equal(t, "gzip", reqHeader.Get("Grpc-Encoding"))
	assert.Equal(t, "gzip", header.Get("Grpc-Encoding"))
	for what, start := range map[string][]byte{"request": reqStart, "response": resStart} {
		flags, _ := envelopeHead(t, start)
		assert.Equal(t, byte(1), flags&1, "%s envelope not flagged compressed: % x", what, start)
		assert.True(t, bytes.HasPrefix(start[5:], gzipMagic), "%s message % x", what, start)
	}
}

// gzipped returns data compressed with gzip.
func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestCompressionCurl: curl posting a gzip body with Content-Encoding:
// gzip is understood, and with --compressed it gets a gzip answer, which
// it inflates.
func TestCompressionCurl(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	t.Cleanup(func() { srv.Close() })
	ts, w := wireServer(t, httpzerodial.NewHandler(srv))
	body := filepath.Join(t.TempDir(), "body.gz")
	require.NoError(t, os.WriteFile(body, gzipped(t, []byte(`{"a":2,"b":3}`)), 0o600))
	for _, version := range []string{"--http1.1", "--http2-prior-knowledge"} {
		out, code := curl(t, version, "--fail-with-body", "--include", "--compressed",
			"-H", "Content-Type: application/json", "-H", "Content-Encoding: gzip",
			"--data-binary", "@"+body, ts.URL+"/Calc/Add")
		require.Zero(t, code, out)
		head, got, _ := strings.Cut(out, "\r\n\r\n")
		assert.Equal(t, "5", got, version)
		assert.Contains(t, strings.ToLower(head), "content-encoding: gzip", version)

		reqHeader, header, reqStart, resStart := w.get()
		assert.Equal(t, "gzip", reqHeader.Get("Content-Encoding"), version)
		assert.True(t, bytes.HasPrefix(reqStart, gzipMagic), "%s: request body % x", version, reqStart)
		assert.Equal(t, "gzip", header.Get("Content-Encoding"), version)
		assert.True(t, bytes.HasPrefix(resStart, gzipMagic), "%s: response body % x", version, resStart)
	}
}

// shapes are the two kinds of call a compressed message can come in: a
// unary call (Calc.Add of 2 and 3), and a stream's message (Calc.Count to
// 2). Each returns the call's error, having checked its answer when there
// is none.
var shapes = []struct {
	name string
	call func(t *testing.T, ts *httptest.Server, p protocol, opts ...connect.ClientOption) error
}{
	{"unary", func(t *testing.T, ts *httptest.Server, p protocol, opts ...connect.ClientOption) error {
		res, err := client[Pair, int](t, ts, p, "/Calc/Add", opts...).CallUnary(context.Background(), connect.NewRequest(&Pair{A: 2, B: 3}))
		if err == nil {
			assert.Equal(t, 5, *res.Msg)
		}
		return err
	}},
	{"stream", func(t *testing.T, ts *httptest.Server, p protocol, opts ...connect.ClientOption) error {
		got, _, err := count(t, client[Pair, int](t, ts, p, "/Calc/Count", opts...), 2, nil)
		if err == nil {
			assert.Equal(t, []int{1, 2}, got)
		}
		return err
	}},
}

// bombCompressor is a connect-go client's gzip compressor that sends, for
// any message, the gzip stream bomb.
type bombCompressor struct {
	w    io.Writer
	bomb []byte
}

func (c *bombCompressor) Write(p []byte) (int, error) { return len(p), nil }

func (c *bombCompressor) Close() error {
	_, err := c.w.Write(c.bomb)
	return err
}

func (c *bombCompressor) Reset(w io.Writer) { c.w = w }

// sendBomb returns the options of a connect-go client that sends bomb as
// each message, as a gzip-compressed one.
func sendBomb(bomb []byte) []connect.ClientOption {
	return []connect.ClientOption{
		connect.WithAcceptCompression("gzip",
			func() connect.Decompressor { return new(gzip.Reader) },
			func() connect.Compressor { return &bombCompressor{bomb: bomb} }),
		connect.WithSendGzip(),
	}
}

// TestCompressionBomb: a gzip request that inflates to far more than the
// read limit (64 MiB of zeros, 64 KiB compressed, against a limit of 256
// KiB) is refused with resource_exhausted, over every protocol, in a unary
// call and in a stream, in words that say so, once the limit and one
// byte more have come out of the Handler's decompressor (which inflates
// at most its 32 KiB window ahead: TestLimitedGzipAsConnect): connect-go
// would inflate the rest, into nothing, to learn its size, a thousand
// times the request's size in work. (Through connect-go's own gzip, 64
// MiB were inflated for each.)
// The process allocates a few times the limit for it, not what the
// request inflates to: connect-go inflates into a buffer of at most the
// limit and one byte. That buffer is a bytes.Buffer, which doubles as it
// grows; with the compressed body's own buffer, 1.3 MB were measured for
// the bomb, 3 MB under the race detector. The bound asserted, 16× the
// limit, is a sixteenth of what the bomb inflates to. (The test runs
// alone: TotalAlloc counts the whole process.)
func TestCompressionBomb(t *testing.T) {
	const limit = 256 << 10
	bomb := gzipped(t, make([]byte, 64<<20))
	require.Less(t, len(bomb), limit, "the bomb itself must fit the limit")

	srv := dispatch.NewServer()
	newCalc(t, srv)
	var inflated atomic.Int64
	ts := serve(t, srv, httpzerodial.WithReadMaxBytes(limit), httpzerodial.WithInflatedCounter(&inflated))

	connectCall := func(t *testing.T, hc *http.Client, body []byte) (int, string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/Calc/Add", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		res, err := hc.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var e connectError
		out, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		if res.StatusCode == http.StatusOK {
			return res.StatusCode, string(out)
		}
		require.NoError(t, json.Unmarshal(out, &e), "body %q", out)
		return res.StatusCode, e.Code
	}
	grpcCall := func(t *testing.T, hc *http.Client, msg []byte) string {
		env := make([]byte, 5, 5+len(msg))
		env[0] = 1 // compressed
		binary.BigEndian.PutUint32(env[1:], uint32(len(msg)))
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/Calc/Add", bytes.NewReader(append(env, msg...)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/grpc+json")
		req.Header.Set("Grpc-Encoding", "gzip")
		req.Header.Set("Te", "trailers")
		res, err := hc.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		_, err = io.Copy(io.Discard, res.Body)
		require.NoError(t, err)
		return res.Trailer.Get("Grpc-Status") + res.Header.Get("Grpc-Status") // trailers, or headers when trailers-only
	}
	// allocated returns what the process allocated during f.
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}

	t.Run("connect", func(t *testing.T) {
		hc := httpClient(t, false)
		// A well-formed compressed call first: the connection, the
		// method's handlers and connect-go's pools are made.
		status, got := connectCall(t, hc, gzipped(t, []byte(`{"a":2,"b":3}`)))
		require.Equal(t, http.StatusOK, status, got)
		require.Equal(t, "5", got)
		inflated.Store(0)
		var code string
		n := allocated(func() { status, code = connectCall(t, hc, bomb) })
		assert.Equal(t, "resource_exhausted", code)
		assert.Equal(t, http.StatusTooManyRequests, status)
		t.Logf("allocated %d bytes and inflated %d for a %d-byte bomb of %d bytes, limit %d", n, inflated.Load(), len(bomb), 64<<20, limit)
		assert.Less(t, n, uint64(16*limit), "allocations for the bomb")
		assert.Equal(t, int64(limit+1), inflated.Load(), "bytes inflated")
	})
	t.Run("grpc", func(t *testing.T) {
		hc := httpClient(t, true)
		require.Equal(t, "0", grpcCall(t, hc, gzipped(t, []byte(`{"a":2,"b":3}`))))
		inflated.Store(0)
		var status string
		n := allocated(func() { status = grpcCall(t, hc, bomb) })
		assert.Equal(t, "8", status, "grpc-status resource_exhausted")
		t.Logf("allocated %d bytes and inflated %d for a %d-byte bomb of %d bytes, limit %d", n, inflated.Load(), len(bomb), 64<<20, limit)
		assert.Less(t, n, uint64(16*limit), "allocations for the bomb")
		assert.Equal(t, int64(limit+1), inflated.Load(), "bytes inflated")
	})
	for _, p := range protocols {
		for _, s := range shapes {
			t.Run(p.name+"/"+s.name, func(t *testing.T) {
				inflated.Store(0)
				err := s.call(t, ts, p, sendBomb(bomb)...)
				assert.Equal(t, connect.CodeResourceExhausted, codeOf(t, err), "%v", err)
				assert.EqualError(t, err, "resource_exhausted: httpzerodial: the message inflates to more than the read limit of 262144 bytes (inflating stopped one byte past it)")
				assert.Equal(t, int64(limit+1), inflated.Load(), "bytes inflated")
			})
		}
	}
}

// paddedJSON is jsonCodec with each message padded with spaces to size
// bytes.
type paddedJSON struct{ size int }

func (paddedJSON) Name() string { return "json" }

func (c paddedJSON) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(b) >= c.size {
		return b, err
	}
	return append(b, bytes.Repeat([]byte{' '}, c.size-len(b))...), nil
}

func (paddedJSON) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestCompressionAtLimit: a gzip request that inflates to exactly the read
// limit is served, over every protocol, in a unary call and in a stream;
// one a byte larger is refused with resource_exhausted. The Handler
// inflates the first whole, the second to the limit and one byte.
func TestCompressionAtLimit(t *testing.T) {
	const limit = 64 << 10
	srv := dispatch.NewServer()
	newCalc(t, srv)
	var inflated atomic.Int64
	ts := serve(t, srv, httpzerodial.WithReadMaxBytes(limit), httpzerodial.WithInflatedCounter(&inflated))
	for _, p := range protocols {
		for _, s := range shapes {
			t.Run(p.name+"/"+s.name, func(t *testing.T) {
				inflated.Store(0)
				require.NoError(t, s.call(t, ts, p, connect.WithCodec(paddedJSON{limit}), connect.WithSendGzip()))
				assert.Equal(t, int64(limit), inflated.Load(), "bytes inflated at the limit")

				inflated.Store(0)
				err := s.call(t, ts, p, connect.WithCodec(paddedJSON{limit + 1}), connect.WithSendGzip())
				assert.Equal(t, connect.CodeResourceExhausted, codeOf(t, err), "%v", err)
				assert.Equal(t, int64(limit+1), inflated.Load(), "bytes inflated a byte past the limit")
			})
		}
	}
}

// countedGzip is a gzip decompressor that counts the bytes it yields.
type countedGzip struct {
	gzip.Reader
	n *atomic.Int64
}

func (d *countedGzip) Read(p []byte) (int, error) {
	n, err := d.Reader.Read(p)
	d.n.Add(int64(n))
	return n, err
}

// TestCompressionOverride: a gzip given through WithConnectOptions takes
// the place of the Handler's own, and so does none: gzip requests are then
// refused as connect-go refuses a compression it does not know.
func TestCompressionOverride(t *testing.T) {
	t.Run("theirs", func(t *testing.T) {
		srv := dispatch.NewServer()
		newCalc(t, srv)
		var theirs, ours atomic.Int64
		ts := serve(t, srv, httpzerodial.WithInflatedCounter(&ours), httpzerodial.WithConnectOptions(
			connect.WithCompression("gzip",
				func() connect.Decompressor { return &countedGzip{n: &theirs} },
				func() connect.Compressor { return gzip.NewWriter(io.Discard) })))
		for _, p := range protocols {
			t.Run(p.name, func(t *testing.T) {
				theirs.Store(0)
				require.NoError(t, shapes[0].call(t, ts, p, connect.WithSendGzip()))
				assert.Equal(t, int64(len(`{"a":2,"b":3}`)), theirs.Load(), "bytes their gzip inflated")
				assert.Zero(t, ours.Load(), "bytes the Handler's gzip inflated")
			})
		}
	})
	t.Run("none", func(t *testing.T) {
		srv := dispatch.NewServer()
		newCalc(t, srv)
		ts := serve(t, srv, httpzerodial.WithConnectOptions(connect.WithCompression("gzip", nil, nil)))
		for _, p := range protocols {
			t.Run(p.name, func(t *testing.T) {
				err := shapes[0].call(t, ts, p, connect.WithSendGzip())
				assert.Equal(t, connect.CodeUnimplemented, codeOf(t, err), "%v", err)
				require.NoError(t, shapes[0].call(t, ts, p), "uncompressed")
			})
		}
	})
}

// TestCompressionMinBytes: connect-go's floor under which an answer goes
// uncompressed, passed through WithConnectOptions, holds for the
// Handler's answers.
func TestCompressionMinBytes(t *testing.T) {
	srv := dispatch.NewServer()
	newCalc(t, srv)
	ts := serve(t, srv, httpzerodial.WithConnectOptions(connect.WithCompressMinBytes(1<<10)))
	hc, rec := recordingClient(t, false)
	add := connect.NewClient[Pair, int](hc, ts.URL+"/Calc/Add", connect.WithCodec(jsonCodec{}), connect.WithSendGzip())
	res, err := add.CallUnary(context.Background(), connect.NewRequest(&Pair{A: 2, B: 3}))
	require.NoError(t, err)
	assert.Equal(t, 5, *res.Msg)
	reqHeader, header, _, resStart := rec.get()
	assert.Equal(t, "gzip", reqHeader.Get("Content-Encoding"), "the client's own choice")
	assert.Empty(t, header.Get("Content-Encoding"), "an answer under the floor")
	assert.Equal(t, "5", string(resStart))
}
