package dispatch_test

import (
	"context"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// oldServer answers as a server from before streams would: every frame is
// a request, answered by a response with its Seq. It knows one method,
// Old.Ping, whose reply is 7; a stream's open frame names a method it does
// not have (it can have no streaming method), and the stream's other
// frames name none. It answers the open frame once the frame after it has
// arrived, so that the caller's first Send surely goes before the answer;
// the answers to the other frames it holds back until the next Old.Ping
// arrives, and sends them just before Old.Ping's reply: a server slow to
// answer them.
func oldServer(t *testing.T, l transport.Listener) {
	sock, err := l.Accept()
	if err != nil {
		return
	}
	defer sock.Close()
	var held []*transport.Message
	var open *transport.Message
	send := func(m *transport.Message) bool { return sock.Send(m) == nil }
	for {
		var m transport.Message
		if err := sock.Recv(&m); err != nil {
			return
		}
		seq, name := m.Header["Seq"], m.Header["Service-Method"]
		if _, ok := m.Header["Cancel"]; ok {
			continue
		}
		switch {
		case name == "Old.Ping":
			for _, h := range held {
				if !send(h) {
					return
				}
			}
			held = nil
			if !send(&transport.Message{Header: map[string]string{"Service-Method": name, "Seq": seq}, Body: []byte{0x07}}) {
				return
			}
		case name != "":
			open = &transport.Message{Header: map[string]string{"Service-Method": name, "Seq": seq,
				"Error": "rpc: can't find method " + name, "Error-Code": "not_found"}}
		default:
			if open != nil {
				if !send(open) {
					return
				}
				open = nil
			}
			held = append(held, &transport.Message{Header: map[string]string{"Seq": seq,
				"Error": "rpc: service/method request ill-formed: ", "Error-Code": "invalid_argument"}})
		}
	}
}

// A stream opened on a server that does not know streams ends with the
// server's answer to its open frame, a unary error response: the caller's
// Recv yields that error, and its Send returns it; nothing waits for ever.
// The server may still answer the stream's other frames, each as a request
// of its own: the stream's Seq is then never reused, so that no later call
// takes one of those answers for its reply.
func TestStreamOnServerWithoutStreams(t *testing.T) {
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		tr := memory.New()
		l, err := tr.Listen("")
		require.NoError(t, err)
		served := make(chan struct{})
		go func() {
			defer close(served)
			oldServer(t, l)
		}()
		c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
		require.NoError(t, err)

		s, err := dispatch.OpenStream[Num, Num](ctx, c, "Old.Stream")
		require.NoError(t, err)
		require.NoError(t, s.Send(&Num{1}), "one message may go before the server's window")
		next, stop := iter.Pull2(s.Recv())
		m, err, ok := next()
		require.True(t, ok)
		assert.Nil(t, m)
		want := &dispatch.Error{Code: dispatch.CodeNotFound, Message: "rpc: can't find method Old.Stream"}
		assert.Equal(t, want, err)
		_, _, ok = next()
		assert.False(t, ok, "the range ends after the error")
		stop()
		assert.Equal(t, want, s.Send(&Num{2}), "Send after the end returns the server's error")
		require.NoError(t, s.Close())

		// The Seq of the stream is not reused: the server's late answer
		// to the stream's message, sent just before this reply, is not
		// taken for it.
		for range 3 {
			var n int
			require.NoError(t, c.Call(ctx, "Old.Ping", nil, &n))
			assert.Equal(t, 7, n)
		}
		// CallStream ends the same way, and its message and half-close
		// get late answers too.
		_, err = collect(dispatch.CallStream[Num, Num](ctx, c, "Old.Other", nil))
		assert.Equal(t, &dispatch.Error{Code: dispatch.CodeNotFound, Message: "rpc: can't find method Old.Other"}, err)
		var n int
		require.NoError(t, c.Call(ctx, "Old.Ping", nil, &n))

		require.NoError(t, c.Close())
		l.Close()
		<-served // the server saw the connection end: nothing of it is left
	}
}
