package tcp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/preface/prefacetest"
	"github.com/zerodial/transport/internal/testcert"
	"github.com/zerodial/transport/tcp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// acceptOne returns the next socket l accepts.
func acceptOne(t *testing.T, l transport.Listener) <-chan transport.Socket {
	ch := make(chan transport.Socket, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		t.Cleanup(func() { s.Close() })
		ch <- s
	}()
	return ch
}

// rawPeer connects a plain TCP connection to l, exchanges prefaces on it,
// and returns it with the socket l made for it.
func rawPeer(t *testing.T, l transport.Listener) (net.Conn, transport.Socket) {
	accepted := acceptOne(t, l)
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = c.Write([]byte(prefacetest.TCP.Preface))
	require.NoError(t, err)
	got := make([]byte, len(prefacetest.TCP.Preface))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, prefacetest.TCP.Preface, string(got), "the listener's preface")
	return c, <-accepted
}

// TestOversizeFrameClosesThatConnectionOnly: a peer announcing a frame over
// the limit gets its connection closed; another connection carries on.
func TestOversizeFrameClosesThatConnectionOnly(t *testing.T) {
	tr := tcp.New(tcp.WithMaxFrameSize(1024))
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()

	bad, badSock := rawPeer(t, l)
	good, goodSock := rawPeer(t, l)

	prefix := []byte{1, 0}
	prefix = binary.BigEndian.AppendUint32(prefix, 0)
	prefix = binary.BigEndian.AppendUint32(prefix, 1025)
	_, err = bad.Write(prefix)
	require.NoError(t, err)
	var m transport.Message
	require.ErrorIs(t, badSock.Recv(&m), transport.ErrFrameTooLarge)
	require.NoError(t, bad.SetReadDeadline(time.Now().Add(20*time.Second))) // a hang guard: the close comes at once
	_, err = bad.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the offending connection is closed")
	require.ErrorIs(t, badSock.Recv(&m), transport.ErrClosed)

	_, err = good.Write([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 'o', 'k'})
	require.NoError(t, err)
	require.NoError(t, goodSock.Recv(&m))
	assert.Equal(t, "ok", string(m.Body))
}

func TestGarbageIsAProtocolError(t *testing.T) {
	tr := tcp.New()
	l, err := tr.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	c, s := rawPeer(t, l)
	_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	var m transport.Message
	require.ErrorIs(t, s.Recv(&m), transport.ErrProtocol)
}

func selfSigned(t *testing.T) (server, client *tls.Config) { return testcert.Configs(t) }

func TestTLS(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	srv := tcp.New(tcp.WithTLS(serverCfg))
	l, err := srv.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()

	accepted := acceptOne(t, l)
	c, err := tcp.New(tcp.WithTLS(clientCfg)).Dial(context.Background(), l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Send(&transport.Message{Header: map[string]string{"k": "v"}, Body: []byte("secret")}))
	s := <-accepted
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	assert.Equal(t, "secret", string(m.Body))
	require.NoError(t, s.Send(&m))
	require.NoError(t, c.Recv(&m))
	assert.Equal(t, "v", m.Header["k"])

	// A client that does not trust the server's certificate fails in Dial,
	// and its connection never reaches Accept.
	accepted = acceptOne(t, l)
	_, err = tcp.New(tcp.WithTLS(&tls.Config{})).Dial(context.Background(), l.Addr().String())
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
	select {
	case s := <-accepted:
		if s != nil {
			s.Close()
		}
		t.Fatal("a connection whose TLS handshake failed reached Accept")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestTLSClientCertRequired: a client without the certificate the listener
// requires fails at Dial — the preface's read sees the server's alert —
// where, without a preface, TLS 1.3 let Dial succeed and the first Recv
// fail.
func TestTLSClientCertRequired(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	serverCfg.ClientAuth = tls.RequireAnyClientCert
	l, err := tcp.New(tcp.WithTLS(serverCfg)).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = tcp.New(tcp.WithTLS(clientCfg)).Dial(t.Context(), l.Addr().String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate required")
	assert.NotErrorIs(t, err, transport.ErrProtocol, "a TLS refusal is not a preface mismatch")
}

func TestTLSConfigIsCloned(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	tr := tcp.New(tcp.WithTLS(clientCfg))
	clientCfg.RootCAs = nil // changing it afterwards has no effect
	l, err := tcp.New(tcp.WithTLS(serverCfg)).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := acceptOne(t, l)
	c, err := tr.Dial(context.Background(), l.Addr().String())
	require.NoError(t, err)
	c.Close()
	(<-accepted).Close()
}

// TestInvalidOptions: a Transport made with invalid options fails every
// Dial and Listen with one error naming each of them and its value; valid
// options beside them change nothing about that.
func TestInvalidOptions(t *testing.T) {
	_, clientCfg := selfSigned(t)
	tr := tcp.New(tcp.WithMaxFrameSize(0), tcp.WithTLS(clientCfg), tcp.WithLogger(nil), tcp.WithMaxFrameSize(-1))
	want := "tcp: WithMaxFrameSize(0): must be between 1 and 4294967295\n" +
		"tcp: WithMaxFrameSize(-1): must be between 1 and 4294967295"
	_, err := tr.Listen("127.0.0.1:0")
	assert.EqualError(t, err, want)
	_, err = tr.Dial(t.Context(), "127.0.0.1:1")
	assert.EqualError(t, err, want)
}
