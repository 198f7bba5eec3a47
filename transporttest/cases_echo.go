package transporttest

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

func allBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// roundTrip sends m on c and returns what comes back.
func roundTrip(t *testing.T, c transport.Socket, m *transport.Message) *transport.Message {
	t.Helper()
	require.NoError(t, c.Send(m))
	var got transport.Message
	require.NoError(t, c.Recv(&got))
	return &got
}

func requireSame(t *testing.T, want, got *transport.Message) {
	t.Helper()
	require.Len(t, got.Header, len(want.Header), "header %v, want %v", got.Header, want.Header)
	for k, v := range want.Header {
		require.Equal(t, v, got.Header[k], "header %q", k)
	}
	require.Equal(t, len(want.Body), len(got.Body), "body length")
	require.True(t, bytes.Equal(want.Body, got.Body), "body differs")
}

func testEcho(t *testing.T, e *env) {
	l := e.listen()
	e.echo(l)
	c := e.dialTo(l.Addr().String())

	msgs := map[string]*transport.Message{
		"empty":         {},
		"empty-non-nil": {Header: map[string]string{}, Body: []byte{}},
		"binary":        {Header: map[string]string{"k": "v"}, Body: allBytes(256)},
		"unicode": {Header: map[string]string{
			"ключ": "значение", "🔑": "✓ 值", "bin\x00key": "\xff\x00\xfe", "": "empty key", "empty value": "",
		}, Body: []byte("héllo, 世界")},
		"many-headers": {Header: manyHeaders(100), Body: []byte("x")},
		"long-value":   {Header: map[string]string{"long": string(allBytes(70000))}},
		"large-body":   {Body: allBytes(200 << 10)},
	}
	if limit, ok := e.maxFrame(); ok {
		h := map[string]string{"at": "limit"}
		msgs["at-limit"] = &transport.Message{Header: h, Body: allBytes(limit - frame.HeaderLen(h))}
	}
	for name, m := range msgs {
		t.Run(name, func(t *testing.T) {
			requireSame(t, m, roundTrip(t, c, m))
		})
	}
}

func manyHeaders(n int) map[string]string {
	h := make(map[string]string, n)
	for i := range n {
		h["key-"+strconv.Itoa(i)] = "value-" + strconv.Itoa(i)
	}
	return h
}

// testSendCopies: when Send returns, the caller owns m again; changing it
// must not change what the peer receives.
func testSendCopies(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	body := []byte("original")
	hdr := map[string]string{"k": "original"}
	m := &transport.Message{Header: hdr, Body: body}
	require.NoError(t, c.Send(m))
	copy(body, "CHANGED!")
	hdr["k"] = "changed"
	hdr["extra"] = "x"
	var got transport.Message
	require.NoError(t, s.Recv(&got))
	assert.Equal(t, "original", string(got.Body))
	assert.Equal(t, map[string]string{"k": "original"}, got.Header)
}

// testRecvReusesMessage: one Message reused for many Recv calls always
// holds exactly the latest message, never a leftover of an earlier one.
func testRecvReusesMessage(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	sent := []*transport.Message{
		{Header: map[string]string{"a": "1", "b": "2"}, Body: bytes.Repeat([]byte("x"), 1000)},
		{Header: map[string]string{"a": "1"}, Body: []byte("short")},
		{},
		{Header: map[string]string{"c": "3"}, Body: bytes.Repeat([]byte("y"), 100)},
		{Header: map[string]string{"c": "3"}, Body: bytes.Repeat([]byte("y"), 100)},
	}
	var got transport.Message
	for i, m := range sent {
		require.NoError(t, c.Send(m))
		require.NoError(t, s.Recv(&got), "message %d", i)
		requireSame(t, m, &got)
	}
}

func testAddrs(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	require.NotNil(t, c.LocalAddr())
	require.NotNil(t, s.LocalAddr())
	assert.Equal(t, l.Addr().String(), c.RemoteAddr().String(), "client's remote address is the listener's")
	assert.Equal(t, c.LocalAddr().String(), s.RemoteAddr().String(), "server's remote address is the client's local one")
	assert.Equal(t, l.Addr().Network(), c.RemoteAddr().Network())
}

func testManySockets(t *testing.T, e *env) {
	l := e.listen()
	e.echo(l)
	const sockets, msgs = 100, 10
	var wg sync.WaitGroup
	errs := make(chan error, sockets)
	for i := range sockets {
		c := e.dialTo(l.Addr().String())
		wg.Go(func() {
			var got transport.Message
			for j := range msgs {
				want := fmt.Sprintf("socket %d message %d", i, j)
				if err := c.Send(&transport.Message{Header: map[string]string{"i": strconv.Itoa(i)}, Body: []byte(want)}); err != nil {
					errs <- err
					return
				}
				if err := c.Recv(&got); err != nil {
					errs <- err
					return
				}
				if string(got.Body) != want || got.Header["i"] != strconv.Itoa(i) {
					errs <- fmt.Errorf("socket %d got %q %v, want %q", i, got.Body, got.Header, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// testConcurrentSenders: 16 goroutines send on one socket; every message
// arrives whole and each goroutine's messages arrive in order.
func testConcurrentSenders(t *testing.T, e *env) {
	l := e.listen()
	c, s := e.dial(l)
	const senders, each = 16, 50
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				size := 1 + (g*131+i*977)%(40<<10) // some above the copy limit
				m := &transport.Message{
					Header: map[string]string{"g": strconv.Itoa(g), "i": strconv.Itoa(i)},
					Body:   bytes.Repeat([]byte{byte(g)}, size),
				}
				if !assert.NoError(t, c.Send(m)) {
					return
				}
			}
		})
	}
	next := make([]int, senders)
	var m transport.Message
	for range senders * each {
		require.NoError(t, s.Recv(&m))
		g, err := strconv.Atoi(m.Header["g"])
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(next[g]), m.Header["i"], "sender %d out of order", g)
		next[g]++
		require.Equal(t, 1+(g*131+(next[g]-1)*977)%(40<<10), len(m.Body))
		for _, b := range m.Body {
			if b != byte(g) {
				t.Fatalf("sender %d: body holds byte %d: frames interleaved", g, b)
			}
		}
	}
	wg.Wait()
}
