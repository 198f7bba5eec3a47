package fallback

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/internal/deadlinerec"
	"github.com/zerodial/transport/internal/testcert"
)

// loopback returns the two ends of a loopback TCP connection, closed when
// the test ends.
func loopback(t *testing.T) (client, server net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		ch <- c
	}()
	client, err = net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	server = <-ch
	require.NotNil(t, server)
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// waitLong bounds a wait for what must happen: generous, since the machine
// may be loaded; only a failing test waits that long.
const waitLong = 10 * time.Second

// offered returns a server end whose client sent first, offered to l.
func offered(t *testing.T, l *Listener, first string) (client net.Conn, err error) {
	t.Helper()
	client, server := loopback(t)
	_, werr := client.Write([]byte(first))
	require.NoError(t, werr)
	return client, l.Offer(server)
}

// assertClosed checks that c's peer closed it: a read gets the end of the
// stream, or a reset, soon.
func assertClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitLong)))
	_, err := io.Copy(io.Discard, c)
	if err != nil {
		assert.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the connection was left open")
	}
}

func newTree(t *testing.T, opts ...Option) *Listener {
	t.Helper()
	l, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// TestReplay: the connection Accept returns reads exactly the byte stream
// the client sent, the bytes read to classify it first, whether the
// client's bytes come in one write or many, read in large reads or one
// byte at a time.
func TestReplay(t *testing.T) {
	stream := []byte(`{"method":"Svc.M","params":[1],"id":0}` + "\n" + `{"method":"Svc.N","params":[2],"id":1}` + "\n")
	for _, chunk := range []int{1, 3, len(stream)} {
		for _, readSize := range []int{1, 7, 4096} {
			l := newTree(t)
			client, server := loopback(t)
			go func() {
				for b := stream; len(b) > 0; {
					n := min(chunk, len(b))
					client.Write(b[:n])
					b = b[n:]
				}
				client.(*net.TCPConn).CloseWrite()
			}()
			require.NoError(t, l.Offer(server))
			c, err := l.Accept()
			require.NoError(t, err)
			assert.Equal(t, JSON, KindOf(c))
			var got bytes.Buffer
			buf := make([]byte, readSize)
			for {
				n, err := c.Read(buf)
				got.Write(buf[:n])
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
			}
			assert.Equal(t, string(stream), got.String(), "chunks of %d, reads of %d", chunk, readSize)
			// Writes are the connection's own.
			_, err = c.Write([]byte("ok"))
			require.NoError(t, err)
			reply := make([]byte, 2)
			_, err = io.ReadFull(client, reply)
			require.NoError(t, err)
			assert.Equal(t, "ok", string(reply))
			assert.Same(t, server, c.(interface{ NetConn() net.Conn }).NetConn())
			c.Close()
		}
	}
}

// TestSniffRead: bytes the caller read already are replayed first, and
// decide the kind without another read when they can.
func TestSniffRead(t *testing.T) {
	client, server := loopback(t)
	_, err := client.Write([]byte("ET / HTTP/1.1\r\n\r\n"))
	require.NoError(t, err)
	c, k, err := Sniff(server, []byte("G"))
	require.NoError(t, err)
	assert.Equal(t, HTTP, k)
	assert.Equal(t, HTTP, KindOf(c))
	buf := make([]byte, len("GET / HTTP/1.1\r\n\r\n"))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	assert.Equal(t, "GET / HTTP/1.1\r\n\r\n", string(buf))

	// Decided already: nothing is read (the connection has nothing to
	// read, and no deadline).
	_, server = loopback(t)
	c, k, err = Sniff(server, []byte("{"))
	require.NoError(t, err)
	assert.Equal(t, JSON, k)
	again, k, err := Sniff(c, nil)
	require.NoError(t, err)
	assert.Same(t, c, again)
	assert.Equal(t, JSON, k)

	// Bytes read from a connection Sniff returned come first again when
	// they are given back.
	client, server = loopback(t)
	_, err = client.Write([]byte(`"a":1}`))
	require.NoError(t, err)
	client.Close()
	c, _, err = Sniff(server, []byte("{"))
	require.NoError(t, err)
	head := make([]byte, 2)
	_, err = io.ReadFull(c, head)
	require.NoError(t, err)
	again, k, err = Sniff(c, head)
	require.NoError(t, err)
	assert.Equal(t, JSON, k)
	all, err := io.ReadAll(again)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(all))
}

// TestSniffUndecided: a client that sends the start of a method and stops,
// or closes, is not guessed at: Sniff fails when the deadline passes, or at
// the end of the stream, saying what it sent.
func TestSniffUndecided(t *testing.T) {
	client, server := loopback(t)
	_, err := client.Write([]byte("PO"))
	require.NoError(t, err)
	require.NoError(t, server.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, _, err = Sniff(server, nil)
	assert.ErrorIs(t, err, ErrUndecided)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Contains(t, err.Error(), `"PO"`)

	client, server = loopback(t)
	_, err = client.Write([]byte("  "))
	require.NoError(t, err)
	client.Close()
	_, _, err = Sniff(server, nil)
	assert.ErrorIs(t, err, ErrUndecided)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// TestOfferTimeout: Offer bounds its wait for a silent client by
// WithTimeout, and closes the client's connection.
func TestOfferTimeout(t *testing.T) {
	l := newTree(t, WithTimeout(100*time.Millisecond))
	client, server := loopback(t)
	err := l.Offer(server)
	assert.ErrorIs(t, err, ErrUndecided)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assertClosed(t, client)
}

// TestOfferClearsDeadline: a connection Offer read has no deadline left:
// the last one set on it is none. (A read that outwaited a 100 ms timeout,
// as this did, could be timed out on a loaded machine that ran Offer late
// between its setting the deadline and its read, the byte there.)
func TestOfferClearsDeadline(t *testing.T) {
	l := newTree(t, WithTimeout(waitLong))
	client, server := loopback(t)
	_, err := client.Write([]byte("\x82"))
	require.NoError(t, err)
	rec := &deadlinerec.Conn{Conn: server}
	require.NoError(t, l.Offer(rec))
	c, err := l.Accept()
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, Msgpack, KindOf(c))
	assert.True(t, rec.ReadDeadline().IsZero(), "Offer left its deadline on the connection: %v", rec.ReadDeadline())
	_, err = client.Write([]byte("late"))
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	assert.Equal(t, "\x82late", string(buf))
}

// TestAcceptClose: Close ends an Accept that waits, closes the connections
// queued, and later Accepts and Offers fail with net.ErrClosed, the
// offered connection closed.
func TestAcceptClose(t *testing.T) {
	l, err := New()
	require.NoError(t, err)
	queued, err := offered(t, l, "GET / HTTP/1.0\r\n\r\n")
	require.NoError(t, err)
	c, err := l.Accept()
	require.NoError(t, err)
	defer c.Close()
	queued2, err := offered(t, l, "{}")
	require.NoError(t, err)

	l2, err := New()
	require.NoError(t, err)
	accepted := make(chan error, 1)
	go func() {
		_, err := l2.Accept()
		accepted <- err
	}()
	require.NoError(t, l2.Close())
	assert.ErrorIs(t, <-accepted, net.ErrClosed)

	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "a second Close is harmless")
	assertClosed(t, queued2)
	_, err = l.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
	late, err := offered(t, l, "{}")
	assert.ErrorIs(t, err, net.ErrClosed)
	assertClosed(t, late)

	// The accepted one stays open.
	_, err = c.Write([]byte("x"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = io.ReadFull(queued, buf)
	require.NoError(t, err)
}

// TestQueueBound: with nobody accepting, WithQueue connections wait and
// the next are closed with ErrFull; once one is accepted, there is room
// again.
func TestQueueBound(t *testing.T) {
	l := newTree(t, WithQueue(2))
	var clients []net.Conn
	for range 2 {
		c, err := offered(t, l, "{}")
		require.NoError(t, err)
		clients = append(clients, c)
	}
	over, err := offered(t, l, "{}")
	assert.ErrorIs(t, err, ErrFull)
	assertClosed(t, over)
	c, err := l.Accept()
	require.NoError(t, err)
	c.Close()
	_, err = offered(t, l, "{}")
	assert.NoError(t, err)
	// The ones waiting are closed with the listener.
	require.NoError(t, l.Close())
	assertClosed(t, clients[1])
}

// TestSplit: kinds go to the listener that took them, the rest to the
// root; a later Split takes a kind over; a closed Split refuses its kinds
// (the root does not take them back); Close of the root closes the tree.
func TestSplit(t *testing.T) {
	root := newTree(t)
	web := root.Split(HTTP, HTTP2)
	_, err := offered(t, root, "GET / HTTP/1.1\r\n")
	require.NoError(t, err)
	_, err = offered(t, web, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") // Offer on a child routes through the tree
	require.NoError(t, err)
	_, err = offered(t, root, ".\x7f\x03")
	require.NoError(t, err)
	_, err = offered(t, root, "{}")
	require.NoError(t, err)

	for _, want := range []Kind{HTTP, HTTP2} {
		c, err := web.Accept()
		require.NoError(t, err)
		assert.Equal(t, want, KindOf(c))
		c.Close()
	}
	for _, want := range []Kind{Gob, JSON} {
		c, err := root.Accept()
		require.NoError(t, err)
		assert.Equal(t, want, KindOf(c))
		c.Close()
	}

	js := web.Split(JSON, HTTP2)
	_, err = offered(t, root, "[1]")
	require.NoError(t, err)
	_, err = offered(t, root, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	require.NoError(t, err)
	for _, want := range []Kind{JSON, HTTP2} {
		c, err := js.Accept()
		require.NoError(t, err)
		assert.Equal(t, want, KindOf(c))
		c.Close()
	}

	require.NoError(t, web.Close())
	refused, err := offered(t, root, "GET / HTTP/1.1\r\n")
	assert.ErrorIs(t, err, net.ErrClosed)
	assertClosed(t, refused)
	_, err = offered(t, root, ".\x7f")
	require.NoError(t, err, "the root still takes its own kinds")

	require.NoError(t, root.Close())
	_, err = js.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
	assert.True(t, root.Split(Gob).isClosed(), "a Split of a closed tree is closed")
}

// TestAddr: a placeholder until the first Offer, then the local address of
// the connection offered, on every listener of the tree.
func TestAddr(t *testing.T) {
	l := newTree(t)
	kid := l.Split(HTTP)
	assert.Equal(t, "fallback", l.Addr().String())
	assert.Equal(t, "fallback", kid.Addr().Network())
	client, server := loopback(t)
	_, err := client.Write([]byte("{}"))
	require.NoError(t, err)
	require.NoError(t, l.Offer(server))
	assert.Equal(t, server.LocalAddr().String(), l.Addr().String())
	assert.Equal(t, l.Addr(), kid.Addr())
}

func TestNewInvalid(t *testing.T) {
	_, err := New(WithQueue(0), WithTimeout(-time.Second), nil)
	assert.EqualError(t, err, "fallback: WithQueue(0): must be positive\nfallback: WithTimeout(-1s): must be positive")
	assert.False(t, errors.Is(err, net.ErrClosed))
}

// TestOfferTLS: Offer of a connection from tls.NewListener completes its
// handshake; a client that negotiated h2 by ALPN is handed on as the
// *tls.Conn itself, unread, and one that negotiated nothing is read inside
// TLS.
func TestOfferTLS(t *testing.T) {
	serverCfg, clientCfg := testcert.Configs(t)
	serverCfg.NextProtos = []string{"h2", "http/1.1"}
	clientCfg.ServerName = "127.0.0.1"
	l := newTree(t)
	for _, tc := range []struct {
		alpn []string
		want Kind
	}{
		{[]string{"h2"}, HTTP2},
		{[]string{"http/1.1"}, HTTP},
		{nil, Gob},
	} {
		client, server := loopback(t)
		cfg := clientCfg.Clone()
		cfg.NextProtos = tc.alpn
		tlsClient := tls.Client(client, cfg)
		go tlsClient.Write([]byte(".\x7f"))
		require.NoError(t, l.Offer(tls.Server(server, serverCfg)))
		c, err := l.Accept()
		require.NoError(t, err)
		assert.Equal(t, tc.want, KindOf(c), "%v", tc.alpn)
		_, isTLS := c.(*tls.Conn)
		assert.Equal(t, tc.alpn != nil, isTLS, "%v: handed on as itself", tc.alpn)
		buf := make([]byte, 2)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		assert.Equal(t, ".\x7f", string(buf))
		c.Close()
	}

	// A client that never completes the handshake is dropped at the
	// timeout.
	l = newTree(t, WithTimeout(100*time.Millisecond))
	_, server := loopback(t)
	err := l.Offer(tls.Server(server, serverCfg))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.ErrorContains(t, err, "fallback: tls handshake")
}
