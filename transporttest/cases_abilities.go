package transporttest

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// testAbilities: the Transport, its Listener, the Listener's address and
// both ends' Sockets implement exactly the optional interfaces claimed,
// each end's Socket its own claim — what a wrapper that forgot one fails,
// naming it.
func testAbilities(t *testing.T, e *env) {
	if err := CheckAbilities(e.tr, e.addr, e.have); err != nil {
		t.Error(err)
	}
}

// sendWay is one way a Socket sends a message.
type sendWay struct {
	name string
	send func(m *transport.Message) error
}

// sendWays lists the ways c sends that has claims of it: Send, and
// SendAsync and Queue with its Flush when claimed.
func sendWays(t *testing.T, c transport.Socket, has Abilities) []sendWay {
	ways := []sendWay{{"Send", c.Send}}
	if has.Has(SocketAsyncSender) {
		ways = append(ways, sendWay{"SendAsync", as[transport.AsyncSender](t, c, SocketAsyncSender).SendAsync})
	}
	if has.Has(SocketBatchSender) {
		b := as[transport.BatchSender](t, c, SocketBatchSender)
		ways = append(ways, sendWay{"Queue", func(m *transport.Message) error { return queue(b, m) }})
	}
	return ways
}

// queue sends m through b as a dispatch Client does: Queue, and Flush when
// Queue says this sender is the writer.
func queue(b transport.BatchSender, m *transport.Message) error {
	flush, err := b.Queue(m)
	if err == nil && flush {
		err = b.Flush(context.Background())
	}
	return err
}

// numbered is message i of sender g: a body whose size varies, some past
// the sizes copied whole, filled with i's low byte.
func numbered(g, i int) *transport.Message {
	return &transport.Message{
		Header: map[string]string{"g": strconv.Itoa(g), "i": strconv.Itoa(i)},
		Body:   bytes.Repeat([]byte{byte(i)}, 1+(g*131+i*7919)%(96<<10)),
	}
}

// requireNumbered fails unless m is message i of sender g, whole.
func requireNumbered(t *testing.T, m *transport.Message, g, i int) {
	t.Helper()
	want := numbered(g, i)
	require.Equal(t, want.Header, m.Header, "sender %d: message %d out of order or changed", g, i)
	require.Equal(t, len(want.Body), len(m.Body), "sender %d message %d: body length", g, i)
	require.True(t, bytes.Equal(want.Body, m.Body), "sender %d message %d: body differs: frames interleaved, or changed after the call returned", g, i)
}

// receive receives n messages on s in a goroutine of its own, into
// copies, so that senders that fill the connection are not held up.
func receive(s transport.Socket, n int) <-chan []*transport.Message {
	out := make(chan []*transport.Message, 1)
	go func() {
		var got []*transport.Message
		defer func() { out <- got }()
		for range n {
			var m transport.Message
			if s.Recv(&m) != nil {
				return
			}
			got = append(got, &m)
		}
	}()
	return out
}

// testSendOrder: Send, SendAsync and Queue, called in turn from one
// goroutine, deliver in the order of the calls (transport.AsyncSender,
// transport.BatchSender), and each takes a copy: the message changed as
// soon as the call returns arrives as it was. Each end that claims
// either is held to it.
func testSendOrder(t *testing.T, e *env) {
	e.eachEnd(SocketAsyncSender|SocketBatchSender, func(t *testing.T, e *env, x end) {
		ways := sendWays(t, x.s, x.has)
		const n = 120
		got := receive(x.peer, n)
		for i := range n {
			m := numbered(0, i)
			w := ways[i%len(ways)]
			require.NoError(t, w.send(m), "%s of message %d", w.name, i)
			// The caller owns m again: what it does to it now must not
			// reach the peer.
			for j := range m.Body {
				m.Body[j] = 0xee
			}
			m.Header["i"] = "changed"
		}
		var msgs []*transport.Message
		within(t, waitLong, "receiving the messages", func() { msgs = <-got })
		require.Len(t, msgs, n, "messages received")
		for i, m := range msgs {
			requireNumbered(t, m, 0, i)
		}
	})
}

// testAsyncSender: SendAsync fails at once with ErrFrameTooLarge for a
// message over the limit, sends nothing and leaves the Socket going, and
// fails with ErrClosed after the local Close; on each end that claims it.
func testAsyncSender(t *testing.T, e *env) {
	e.eachEnd(SocketAsyncSender, func(t *testing.T, e *env, x end) {
		a := as[transport.AsyncSender](t, x.s, SocketAsyncSender)
		if limit, ok := e.maxFrame(); ok {
			require.ErrorIs(t, a.SendAsync(&transport.Message{Body: make([]byte, limit+1)}), transport.ErrFrameTooLarge)
		}
		require.NoError(t, a.SendAsync(&transport.Message{Body: []byte("fits")}))
		var m transport.Message
		require.NoError(t, x.peer.Recv(&m))
		assert.Equal(t, "fits", string(m.Body), "an oversize message must send nothing")

		require.NoError(t, x.s.Close())
		assert.ErrorIs(t, a.SendAsync(&transport.Message{Body: []byte("late")}), transport.ErrClosed, "SendAsync after Close")
	})
}

// testBatchSender: 16 senders share one Socket through Queue and Flush, as
// a dispatch Client's callers do; every message arrives whole and each
// sender's in its order. Queue fails at once with ErrFrameTooLarge for a
// message over the limit and the Socket goes on, and with ErrClosed after
// the local Close. On each end that claims it.
func testBatchSender(t *testing.T, e *env) {
	e.eachEnd(SocketBatchSender, func(t *testing.T, e *env, x end) {
		b := as[transport.BatchSender](t, x.s, SocketBatchSender)

		const senders, each = 16, 40
		got := receive(x.peer, senders*each)
		var wg sync.WaitGroup
		for g := range senders {
			wg.Go(func() {
				for i := range each {
					if !assert.NoError(t, queue(b, numbered(g, i)), "sender %d message %d", g, i) {
						return
					}
				}
			})
		}
		wg.Wait()
		var msgs []*transport.Message
		within(t, waitLong, "receiving the messages", func() { msgs = <-got })
		require.Len(t, msgs, senders*each, "messages received")
		next := make([]int, senders)
		for _, m := range msgs {
			g, err := strconv.Atoi(m.Header["g"])
			require.NoError(t, err)
			requireNumbered(t, m, g, next[g])
			next[g]++
		}

		if limit, ok := e.maxFrame(); ok {
			flush, err := b.Queue(&transport.Message{Body: make([]byte, limit+1)})
			require.ErrorIs(t, err, transport.ErrFrameTooLarge)
			require.False(t, flush, "a refused message made its sender the writer")
		}
		require.NoError(t, queue(b, &transport.Message{Body: []byte("fits")}))
		var m transport.Message
		require.NoError(t, x.peer.Recv(&m))
		assert.Equal(t, "fits", string(m.Body), "an oversize message must send nothing")

		require.NoError(t, x.s.Close())
		_, err := b.Queue(&transport.Message{Body: []byte("late")})
		assert.ErrorIs(t, err, transport.ErrClosed, "Queue after Close")
	})
}
