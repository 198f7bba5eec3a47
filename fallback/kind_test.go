package fallback

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"net/rpc"
	"net/rpc/jsonrpc"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capture returns the first bytes a real client sends: client is run
// against a loopback listener that reads until they are enough to
// classify, PrefixLen of them, or the client stops, then closes the
// connection (the client then fails, which is client's to ignore). It
// waits for them up to waitLong: what arrived within 300 ms, as it was,
// was nothing, or too little, when a loaded machine ran the client late.
func capture(t *testing.T, client func(addr string)) []byte {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		var b bytes.Buffer
		buf := make([]byte, 4096)
		_ = c.SetReadDeadline(time.Now().Add(waitLong))
		for b.Len() < PrefixLen {
			if _, decided := Classify(b.Bytes()); decided {
				break
			}
			n, err := c.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		client(l.Addr().String())
	}()
	b := <-got
	<-done
	require.NotEmpty(t, b, "the client sent nothing")
	return b
}

// clients are the real clients of every kind, each run once against addr.
var clients = map[Kind]func(t *testing.T, addr string){
	Gob: func(t *testing.T, addr string) {
		c, err := rpc.Dial("tcp", addr)
		if err == nil {
			_ = c.Call("Svc.Method", 1, new(int))
			c.Close()
		}
	},
	JSON: func(t *testing.T, addr string) {
		c, err := jsonrpc.Dial("tcp", addr)
		if err == nil {
			_ = c.Call("Svc.Method", 1, new(int))
			c.Close()
		}
	},
	HTTP: func(t *testing.T, addr string) {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		if resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
		}
	},
	HTTP2: func(t *testing.T, addr string) {
		// HTTP/2 with prior knowledge: cleartext, no upgrade.
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: &p}
		defer tr.CloseIdleConnections()
		if resp, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
		}
	},
	TLS: func(t *testing.T, addr string) {
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "example.com"})
		if err == nil {
			c.Close()
		}
	},
}

// TestClassifyRealClients: the first bytes of each real client are of its
// kind, and no shorter prefix of them decides another: Classify waits
// until it is right.
func TestClassifyRealClients(t *testing.T) {
	for want, client := range clients {
		t.Run(want.String(), func(t *testing.T) {
			b := capture(t, func(addr string) { client(t, addr) })
			t.Logf("%v sends %q", want, b[:min(len(b), PrefixLen)])
			k, decided := Classify(b)
			assert.True(t, decided)
			assert.Equal(t, want, k)
			assertNoEarlyDecision(t, b, want)
		})
	}
}

// assertNoEarlyDecision checks that every prefix of b that Classify decides
// on is decided as want.
func assertNoEarlyDecision(t *testing.T, b []byte, want Kind) {
	t.Helper()
	for n := 1; n <= min(len(b), PrefixLen); n++ {
		if k, decided := Classify(b[:n]); decided {
			assert.Equal(t, want, k, "decided on %q", b[:n])
			return
		}
	}
	t.Errorf("%q is never decided", b)
}

// TestClassifyGobFirstBytes: net/rpc's gob client opens with the length of
// its first message (the type of rpc.Request), 0x01-0x7F, which is decided
// at the first byte unless it could start an HTTP method.
func TestClassifyGobFirstBytes(t *testing.T) {
	b := capture(t, func(addr string) { clients[Gob](t, addr) })
	assert.True(t, b[0] >= 0x01 && b[0] <= 0x7F || b[0] >= 0xF8, "first byte %#x", b[0])
	k, decided := Classify(b[:1])
	assert.Equal(t, Gob, k)
	assert.True(t, decided, "%q could be the start of something else", b[:1])
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Kind
		decided bool
	}{
		{"", Unknown, false},
		{"G", Gob, false}, // "GET " or a gob length of 71
		{"GE", Gob, false},
		{"GET", Gob, false},
		{"GET ", HTTP, true},
		{"GEX", Gob, true},
		{"G\xff\x81", Gob, true},
		{"POST /x", HTTP, true},
		{"PUT ", HTTP, true},
		{"PATCH ", HTTP, true},
		{"HEAD ", HTTP, true},
		{"DELETE ", HTTP, true},
		{"OPTIONS ", HTTP, true},
		{"CONNECT ", HTTP, true},
		{"TRACE ", HTTP, true},
		{"P", Gob, false},
		{"PRI * HTTP/2.", Gob, false},
		{"PRI * HTTP/2.0\r\n", HTTP2, true},
		{"PRI * HTTP/1.0", Gob, true},
		{"get ", Gob, true}, // methods are case-sensitive
		{"{", JSON, true},
		{"[", JSON, true},
		{" \t\r\n{", JSON, true},
		{" ", Gob, false},
		{"                ", Gob, true}, // PrefixLen of whitespace: decided
		{" \xff", Gob, true},
		{"\x16", Gob, false},
		{"\x16\x03\x01", TLS, true},
		{"\x16\x01", Gob, true},
		{"\x82", Msgpack, true},
		{"\x80", Msgpack, true},
		{"\x8f", Msgpack, true},
		{"\xde\x00\x02", Msgpack, true},
		{"\xdf", Msgpack, true},
		{"\xf8", Gob, true},
		{"\xff", Gob, true},
		{"\x00", Unknown, true},
		{"\x90", Unknown, true},
		{"\xdd", Unknown, true},
		{"\xe0", Unknown, true},
		{"\xf7", Unknown, true},
	} {
		k, decided := Classify([]byte(tc.in))
		assert.Equal(t, tc.want, k, "%q", tc.in)
		assert.Equal(t, tc.decided, decided, "%q", tc.in)
	}
}

func TestKindString(t *testing.T) {
	for k, s := range map[Kind]string{Unknown: "unknown", Gob: "gob", JSON: "json", Msgpack: "msgpack", HTTP: "http", HTTP2: "http2", TLS: "tls", 200: "unknown"} {
		assert.Equal(t, s, k.String())
	}
}

// FuzzClassify: Classify never panics, always decides with PrefixLen
// bytes, and never takes back a decision: once a prefix is decided, every
// longer input is decided the same.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\n", "PRI * HTTP/2.0\r\n\r\nSM", "{\"method\":1}", "  [", "\x16\x03\x01\x00", "\x82\xadServiceMethod", ".\x7f\x03\x01\x01\aRequest", "ZDIALt\x01\x00", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, decided := Classify(b)
		if len(b) >= PrefixLen && !decided {
			t.Fatalf("%q: undecided with %d bytes", b, len(b))
		}
		if k > TLS {
			t.Fatalf("%q: kind %d", b, k)
		}
		for n := 1; n < len(b); n++ {
			if kn, d := Classify(b[:n]); d {
				if !decided || kn != k {
					t.Fatalf("%q decided %v at %d bytes, then %v (decided %v)", b, kn, n, k, decided)
				}
				break
			}
		}
	})
}
