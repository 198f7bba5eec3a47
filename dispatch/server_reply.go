package dispatch

import (
	"context"
	"sync"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
)

// response is a reusable reply message and its body buffer.
type response struct {
	msg transport.Message
	buf []byte
}

var responses = sync.Pool{New: func() any {
	return &response{msg: transport.Message{Header: make(map[string]string, 4)}}
}}

// maxPooledBody bounds the body buffer a pooled response keeps (the pool
// itself lets the collector free idle ones).
const maxPooledBody = 2 << 20

// reply sends the response to one call, with its metadata md. A reply that cannot be encoded is
// answered with an error instead; a reply over a frame limit, its
// metadata or an error's message included, is answered with
// CodeInternal (replyTooLarge) without them; a reply that cannot be sent
// at all closes the connection, so the caller sees a failure rather than
// waiting forever. mayHold says the caller is the connection's reader,
// which may hold the reply's write back (replyHold).
func (c *serverConn) reply(seqText, name string, cdc codec.Codec, reply any, md Metadata, e *Error, mayHold bool) {
	err := c.sendReply(seqText, name, cdc, reply, md, e, mayHold)
	if err == nil {
		return
	}
	if isFrameTooLarge(err) {
		// The connection is fine; only this reply is too big. What may
		// make it so stays behind — the body, the metadata, an error's
		// message — as the shortcut does (replyCheck). Should even that
		// be too big (a name near the frame limit), the connection
		// closes.
		if err = c.sendReply(seqText, name, nil, nil, nil, replyTooLarge(name, err), mayHold); err == nil {
			return
		}
	}
	c.sock.Close()
}

// sendReply encodes and sends one reply; reply says what to do when it
// fails.
func (c *serverConn) sendReply(seqText, name string, cdc codec.Codec, reply any, md Metadata, e *Error, mayHold bool) error {
	r := responses.Get().(*response)
	defer func() {
		r.msg.Body = nil
		if cap(r.buf) > maxPooledBody {
			r.buf = nil
		}
		responses.Put(r)
	}()
	body := r.buf[:0]
	if e == nil {
		if body, e = encodeReply(cdc, body, name, reply); e != nil {
			body = body[:0]
		}
	}
	r.buf = body
	responseHeader(r.msg.Header, name, seqText, e, md)
	if e != nil {
		body = body[:0]
	}
	r.msg.Body = body
	n := int64(len(body))
	c.bytes.Add(n)
	err := c.sendBounded(&r.msg, mayHold)
	c.bytes.Add(-n)
	return err
}

// sendBounded sends m under the connection's watchdog, which closes the
// connection if the Send, waiting for the socket included, has not
// finished within the reply timeout (WithReplyTimeout): a peer that stops
// reading its replies must not hold the goroutines and the memory of its
// calls for ever.
//
// A small message goes through the socket's batch when it has one
// (transport.BatchSender): one queued behind a write under way returns at
// once and goes out with that write's next batch, so that the replies of
// calls finishing together share a write (BenchmarkParallel). The
// socket's queue bounds what waits there (frame's maxQueued), and what
// waits counts in WithMaxBytesPerConn until it is written (held).
// mayHold says the caller is the connection's reader, which may hold the
// write back while the next request is there already (replyHold).
func (c *serverConn) sendBounded(m *transport.Message, mayHold bool) error {
	w := c.watchdog
	if w != nil {
		w.Begin()
		defer w.End()
	}
	if c.batch == nil || len(m.Body) > maxBatchedBody {
		return c.sock.Send(m)
	}
	flush, err := c.batch.Queue(m)
	if flush && err == nil && !(mayHold && c.holdReply()) {
		err = c.batch.Flush(context.Background())
	}
	return err
}

// stalled closes a connection whose peer has not taken a reply within the
// reply timeout.
func (c *serverConn) stalled() {
	c.srv.opts.logger.Warn("dispatch: closing connection: a reply could not be written in time; the peer is not reading",
		"remote", c.sock.RemoteAddr(), "timeout", c.srv.opts.replyTimeout)
	c.sock.Close()
}
