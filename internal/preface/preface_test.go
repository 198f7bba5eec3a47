package preface

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/deadlinerec"
	"github.com/zerodial/transport/internal/preface/prefacetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitLong is the timeout of an exchange that must succeed, or fail on what
// the peer sent: generous, since the machine may be loaded; only a failing
// test waits that long.
const waitLong = 10 * time.Second

// belowTimeout tells an exchange that ended on an event (a byte, a failed
// write, ctx) from one that waited for its minute's timeout, by a margin
// no loaded machine eats.
const belowTimeout = 30 * time.Second

// TestBytes: the bytes of WIRE.md's example, and the names transport.Wire
// uses.
func TestBytes(t *testing.T) {
	assert.Equal(t, []byte{0x5a, 0x44, 0x49, 0x41, 0x4c, 0x74, 0x01, 0x00}, Of(TCP).Append(nil))
	assert.Equal(t, []byte("ZDIALm\x01\x00"), Of(Mux).Append(nil))
	assert.Equal(t, "tcp/1", Of(TCP).String())
	assert.Equal(t, "mux/1", Of(Mux).String())
	assert.Equal(t, "'x'/2", Preface{Protocol: 'x', Version: 2}.String())
	assert.Equal(t, `'\x00'/1`, Preface{Protocol: 0, Version: 1}.String())
	assert.Equal(t, []byte("ZDIALt\x01\x01"), Of(TCP).With(CapS2).Append(nil))
	assert.Equal(t, "tcp/1", Of(TCP).With(CapS2).String(), "capabilities are not part of the name")
}

// TestExchangeCapabilities: each end learns what the other announced, and
// ends that announce different capabilities still agree on the protocol.
func TestExchangeCapabilities(t *testing.T) {
	a, b := pair(t)
	type result struct {
		p   Preface
		err error
	}
	ch := make(chan result, 1)
	go func() {
		p, err := Exchange(t.Context(), b, Of(TCP), "a", waitLong)
		ch <- result{p, err}
	}()
	pa, err := Exchange(t.Context(), a, Of(TCP).With(CapS2|0x80), "b", waitLong)
	require.NoError(t, err)
	rb := <-ch
	require.NoError(t, rb.err)
	assert.Equal(t, Of(TCP), pa, "b announced nothing")
	assert.Equal(t, Of(TCP).With(CapS2|0x80), rb.p, "b sees a's bits, the unknown one too")
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Preface
		err  error
	}{
		{"ZDIALt\x01\x00", Of(TCP), nil},
		{"ZDIALm\x01\x00", Of(Mux), nil},
		{"ZDIALm\x02\x00", Preface{Protocol: Mux, Version: 2}, nil},
		{"ZDIALt\x01\xff", Of(TCP).With(0xff), nil}, // capabilities: returned, unknown bits too
		{"ZDIALt\x01\x00trailing", Of(TCP), nil},
		{"", Preface{}, ErrIncomplete},
		{"ZD", Preface{}, ErrIncomplete},
		{"ZDIALt\x01", Preface{}, ErrIncomplete},
		{"HTTP/1.1", Preface{}, ErrForeign},
		{"Z-", Preface{}, ErrForeign}, // told at the first wrong byte
		{"zdialt\x01\x00", Preface{}, ErrForeign},
		{"\x00\x00\x00\x00\x00\x00\x00\x00", Preface{}, ErrForeign},
	} {
		p, err := Parse([]byte(tc.in))
		assert.ErrorIs(t, err, tc.err, "%q", tc.in)
		if tc.err == nil {
			assert.NoError(t, err, "%q", tc.in)
		}
		assert.Equal(t, tc.want, p, "%q", tc.in)
	}
}

func TestErrorText(t *testing.T) {
	const peer = "127.0.0.1:5000"
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Got: []byte("ZDIALm\x01\x00")}, "tcp: 127.0.0.1:5000 speaks zerodial mux/1, not tcp/1"},
		{Error{Got: []byte("ZDIALt\x02\x00")}, "tcp: 127.0.0.1:5000 speaks zerodial tcp/2, not tcp/1"},
		{Error{Got: []byte("HTTP/1.1"), Err: ErrForeign}, `tcp: 127.0.0.1:5000 speaks HTTP/1, not zerodial (it sent "HTTP/1.1"): ` + OverHTTP},
		{Error{Got: []byte("HTTP/1.0 "), Err: ErrForeign}, `tcp: 127.0.0.1:5000 speaks HTTP/1, not zerodial (it sent "HTTP/1.0 "): ` + OverHTTP},
		// An HTTP/2 server's SETTINGS frame: 3 settings (18 bytes), stream 0.
		{Error{Got: []byte("\x00\x00\x12\x04\x00\x00\x00\x00"), Err: ErrForeign}, `tcp: 127.0.0.1:5000 speaks HTTP/2, not zerodial (it sent "\x00\x00\x12\x04\x00\x00\x00\x00"): ` + OverHTTP},
		{Error{Got: []byte("\x00\x00\x12\x04\x00\x00\x00\x01"), Err: ErrForeign}, `tcp: 127.0.0.1:5000 is not a zerodial peer (it sent "\x00\x00\x12\x04\x00\x00\x00\x01")`},
		{Error{Got: []byte("\x00\x00\x05\x04\x00\x00\x00\x00"), Err: ErrForeign}, `tcp: 127.0.0.1:5000 is not a zerodial peer (it sent "\x00\x00\x05\x04\x00\x00\x00\x00")`},
		{Error{Got: []byte("-E"), Err: ErrForeign}, `tcp: 127.0.0.1:5000 is not a zerodial peer (it sent "-E")`},
		{Error{Got: []byte{}, Err: io.EOF}, "tcp: 127.0.0.1:5000 closed the connection before its preface: EOF"},
		{Error{Got: []byte("ZDI"), Err: io.ErrUnexpectedEOF}, "tcp: 127.0.0.1:5000 closed the connection after 3 bytes of its preface: unexpected EOF"},
		{Error{Got: []byte{}, Err: os.ErrDeadlineExceeded, Timeout: 10 * time.Second}, "tcp: 127.0.0.1:5000 sent no preface within 10s"},
		{Error{Got: []byte("ZD"), Err: os.ErrDeadlineExceeded, Timeout: time.Second}, "tcp: 127.0.0.1:5000 sent only 2 bytes of its preface within 1s"},
	} {
		e := tc.e
		e.Transport, e.Peer, e.Want = "tcp", peer, Of(TCP)
		assert.Equal(t, tc.want, e.Error())
		assert.ErrorIs(t, &e, transport.ErrProtocol)
		if e.Err != nil {
			assert.ErrorIs(t, &e, e.Err)
		}
	}
}

// pair returns the two ends of a loopback TCP connection, closed when the
// test ends. TestExchangePipe covers a connection whose writes wait for the
// reader.
func pair(t *testing.T) (a, b net.Conn) { return prefacetest.Loopback(t) }

// both runs Exchange on both ends at once and returns their errors.
func both(ctx context.Context, a, b net.Conn, pa, pb byte) (errA, errB error) {
	ch := make(chan error, 1)
	go func() { _, err := Exchange(ctx, b, Of(pb), "a", waitLong); ch <- err }()
	_, errA = Exchange(ctx, a, Of(pa), "b", waitLong)
	return errA, <-ch
}

func TestExchange(t *testing.T) {
	a, b := pair(t)
	// What follows the preface is left for the next reader.
	_, err := b.Write(append(Of(TCP).Append(nil), "after"...))
	require.NoError(t, err)
	rec := &deadlinerec.Conn{Conn: a}
	_, err = Exchange(t.Context(), rec, Of(TCP), "b", waitLong)
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(a, buf)
	require.NoError(t, err)
	assert.Equal(t, "after", string(buf))

	// The deadline is cleared: recorded, rather than seen to pass by a
	// read that outwaits it, which had to outwait the exchange's timeout,
	// and so took that timeout to be short enough for a loaded machine.
	assert.True(t, rec.ReadDeadline().IsZero(), "the exchange left a deadline on the connection: %v", rec.ReadDeadline())
}

func TestExchangeBoth(t *testing.T) {
	a, b := pair(t)
	require.NoError(t, errors.Join(both(t.Context(), a, b, Mux, Mux)))
}

// TestExchangePipe: over net.Pipe a write waits for the peer's read, and
// both ends write first; the exchange still completes, and a mismatch is
// still named, on both ends.
func TestExchangePipe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.NoError(t, errors.Join(both(t.Context(), a, b, TCP, TCP)))
	// Nothing of the preface is left over: the next message is the next.
	go b.Write([]byte("next"))
	buf := make([]byte, 4)
	_, err := io.ReadFull(a, buf)
	require.NoError(t, err)
	assert.Equal(t, "next", string(buf))

	a, b = net.Pipe()
	defer a.Close()
	defer b.Close()
	errA, errB := both(t.Context(), a, b, TCP, Mux)
	assert.EqualError(t, errA, "tcp: b speaks zerodial mux/1, not tcp/1")
	assert.EqualError(t, errB, "mux: a speaks zerodial tcp/1, not mux/1")
}

// TestExchangePipeSilent: over net.Pipe a silent peer reads nothing either,
// so the write times out with the read; the error says what the peer did
// not send, as over TCP.
func TestExchangePipeSilent(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_, err := Exchange(t.Context(), a, Of(TCP), "b", 100*time.Millisecond)
	assert.EqualError(t, err, "tcp: b sent no preface within 100ms")
	assert.ErrorIs(t, err, transport.ErrProtocol)
}

// failingWrites is a connection whose writes fail at once.
type failingWrites struct{ net.Conn }

func (failingWrites) Write([]byte) (int, error) { return 0, errors.New("broken") }

// TestExchangeWriteFails: a failed write ends the exchange at once, with
// the write's error, rather than leaving the read to wait for the timeout.
func TestExchangeWriteFails(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	start := time.Now()
	_, err := Exchange(t.Context(), failingWrites{a}, Of(TCP), "b", time.Minute)
	assert.EqualError(t, err, "tcp: preface with b: write: broken")
	assert.NotErrorIs(t, err, transport.ErrProtocol, "this end failed, not the peer")
	assert.Less(t, time.Since(start), belowTimeout, "the read outlived the failed write")
}

func TestExchangeMismatch(t *testing.T) {
	a, b := pair(t)
	errA, errB := both(t.Context(), a, b, TCP, Mux)
	require.ErrorIs(t, errA, transport.ErrProtocol)
	assert.EqualError(t, errA, "tcp: b speaks zerodial mux/1, not tcp/1")
	assert.True(t, Mismatch(errA))
	assert.EqualError(t, errB, "mux: a speaks zerodial tcp/1, not mux/1")
}

func TestExchangeVersion(t *testing.T) {
	a, b := pair(t)
	_, err := b.Write([]byte("ZDIALm\x02\x00"))
	require.NoError(t, err)
	_, err = Exchange(t.Context(), a, Of(Mux), "b", waitLong)
	assert.EqualError(t, err, "mux: b speaks zerodial mux/2, not mux/1")
	assert.ErrorIs(t, err, transport.ErrProtocol)
}

func TestExchangeForeign(t *testing.T) {
	a, b := pair(t)
	_, err := b.Write([]byte("-ERR\r\n")) // six bytes, then silence
	require.NoError(t, err)
	start := time.Now()
	_, err = Exchange(t.Context(), a, Of(TCP), "b", time.Minute)
	assert.EqualError(t, err, `tcp: b is not a zerodial peer (it sent "-ERR\r\n")`)
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.False(t, Mismatch(err))
	assert.Less(t, time.Since(start), belowTimeout, "a foreign peer is told at its first wrong byte")
}

func TestExchangeClosed(t *testing.T) {
	a, b := pair(t)
	b.Close()
	_, err := Exchange(t.Context(), a, Of(TCP), "b", waitLong)
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.ErrorIs(t, err, io.EOF)
	assert.Contains(t, err.Error(), "tcp: b closed the connection before its preface")

	a, b = pair(t)
	_, err = b.Write([]byte("ZDIA"))
	require.NoError(t, err)
	b.(*net.TCPConn).CloseWrite()
	_, err = Exchange(t.Context(), a, Of(TCP), "b", waitLong)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Contains(t, err.Error(), "after 4 bytes of its preface")
}

func TestExchangeSilent(t *testing.T) {
	a, _ := pair(t)
	start := time.Now()
	_, err := Exchange(context.Background(), a, Of(TCP), "b", 100*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "before the timeout")
	assert.EqualError(t, err, "tcp: b sent no preface within 100ms")
	assert.ErrorIs(t, err, transport.ErrProtocol)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's ctx did not end")
}

func TestExchangeContext(t *testing.T) {
	a, _ := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Exchange(ctx, a, Of(TCP), "b", time.Minute)
	assert.Less(t, time.Since(start), belowTimeout, "the exchange outlived its ctx")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	a, _ = pair(t)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = Exchange(ctx, a, Of(TCP), "b", time.Minute)
	assert.ErrorIs(t, err, context.Canceled)

	// An ended ctx fails even an exchange that would succeed.
	a, b := pair(t)
	_, err = b.Write(Of(TCP).Append(nil))
	require.NoError(t, err)
	_, err = Exchange(ctx, a, Of(TCP), "b", time.Minute)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestWire(t *testing.T) {
	assert.Equal(t, transport.Wire{Protocol: "tcp/1"}, DialWire(TCP, nil))
	assert.Equal(t, transport.Wire{Protocol: "mux/1"}, ListenWire(Mux, nil))
	assert.Equal(t, transport.Wire{Protocol: "mux/1", TLS: true}, DialWire(Mux, &tls.Config{}))
	assert.Equal(t, transport.Wire{Protocol: "mux/1", TLS: true, ClientCert: true},
		DialWire(Mux, &tls.Config{Certificates: make([]tls.Certificate, 1)}))
	assert.Equal(t, transport.Wire{Protocol: "tcp/1", TLS: true, ClientCert: true},
		DialWire(TCP, &tls.Config{GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return nil, nil }}))
	for auth, want := range map[tls.ClientAuthType]bool{
		tls.NoClientCert:               false,
		tls.RequestClientCert:          false,
		tls.VerifyClientCertIfGiven:    false,
		tls.RequireAnyClientCert:       true,
		tls.RequireAndVerifyClientCert: true,
	} {
		assert.Equal(t, want, ListenWire(TCP, &tls.Config{ClientAuth: auth}).ClientCert, "%v", auth)
	}
}

func FuzzParse(f *testing.F) {
	// The seed corpus is in testdata/fuzz/FuzzParse; these add the
	// prefaces this package sends.
	f.Add(Of(TCP).Append(nil))
	f.Add(Of(Mux).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		m := min(len(b), len(Magic))
		switch {
		case err == nil:
			require.GreaterOrEqual(t, len(b), Len)
			// A preface that parses encodes back to the same bytes, but
			// for the reserved byte.
			again := p.Append(nil)
			require.Equal(t, b[:Len-1], again[:Len-1])
		case errors.Is(err, ErrIncomplete):
			require.Less(t, len(b), Len)
			require.Equal(t, Magic[:m], string(b[:m]))
		case errors.Is(err, ErrForeign):
			require.NotEqual(t, Magic[:m], string(b[:m]))
		default:
			t.Fatalf("unexpected error %v", err)
		}
		// Every outcome formats, and quotes at most Len bytes.
		e := &Error{Transport: "tcp", Peer: "p", Want: Of(TCP), Got: b[:min(len(b), Len)], Err: err}
		require.LessOrEqual(t, len(e.Error()), 100+4*Len+len(OverHTTP))
		require.True(t, bytes.HasPrefix([]byte(e.Error()), []byte("tcp: p ")))
	})
}
