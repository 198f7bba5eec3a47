package dispatch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
)

// clientConn is one socket's worth of calls: a writer shared by the callers
// and a read loop that hands each reply to its call.
type clientConn struct {
	sock  transport.Socket
	codec codec.Codec
	ctype string

	sendMu sync.Mutex
	req    transport.Message
	buf    []byte

	mu      sync.Mutex
	next    uint64   // the next sequence number never used
	free    []uint64 // numbers whose replies have come back, for reuse
	pending map[uint64]*pending
	err     error // why the connection ended; nil while it works
	done    chan struct{}
}

// pending is a call waiting for its reply. Pooled: a call costs no channel.
type pending struct {
	name  string
	reply any
	err   error
	done  chan struct{}
}

// abandoned marks a sequence number whose caller gave up. The number is
// never reused, so a late reply can never be taken for the reply to a later
// call.
var abandoned = new(pending)

var pendings = sync.Pool{New: func() any { return &pending{done: make(chan struct{}, 1)} }}

func newClientConn(sock transport.Socket, c codec.Codec) *clientConn {
	cc := &clientConn{
		sock:    sock,
		codec:   c,
		ctype:   c.Name(),
		req:     transport.Message{Header: make(map[string]string, 4)},
		pending: make(map[uint64]*pending),
		done:    make(chan struct{}),
	}
	go cc.readLoop()
	return cc
}

func (cc *clientConn) failed() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err != nil
}

// close fails every call in flight with ErrShutdown.
func (cc *clientConn) close() {
	cc.fail(ErrShutdown)
	cc.sock.Close()
	<-cc.done
}

// fail ends the connection for every call in flight.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err == nil {
		cc.err = err
	}
	ps := cc.pending
	cc.pending = make(map[uint64]*pending)
	cc.mu.Unlock()
	for _, p := range ps {
		if p == abandoned {
			continue
		}
		p.err = err
		p.done <- struct{}{}
	}
}

func (cc *clientConn) call(ctx context.Context, name string, args, reply any) error {
	p := pendings.Get().(*pending)
	p.name, p.reply, p.err = name, reply, nil
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		release(p)
		return ErrShutdown
	}
	// Reusing numbers keeps them small and few, so the header strings that
	// carry them are the same ones again and cost no allocation.
	var seq uint64
	if n := len(cc.free); n > 0 {
		seq = cc.free[n-1]
		cc.free = cc.free[:n-1]
	} else {
		seq = cc.next
		cc.next++
	}
	cc.pending[seq] = p
	cc.mu.Unlock()

	if err := cc.send(ctx, seq, name, args); err != nil {
		if cc.remove(seq, true) {
			release(p)
			return err
		}
		<-p.done // the connection failed meanwhile and answered p
		release(p)
		return err
	}

	if d := ctx.Done(); d == nil {
		<-p.done
	} else {
		select {
		case <-p.done:
		case <-d:
			if cc.remove(seq, false) {
				// A passed deadline ends the handler's context on the
				// server by itself (the Timeout header), with the same
				// error the handler would see on the shortcut; only a
				// cancellation needs telling.
				if ctx.Err() != context.DeadlineExceeded {
					cc.sendCancel(seq)
				}
				release(p)
				return ctxError(ctx)
			}
			<-p.done // the reply is being delivered; take it
		}
	}
	err := p.err
	release(p)
	return err
}

func release(p *pending) {
	p.reply, p.err = nil, nil
	pendings.Put(p)
}

// remove takes seq's call out of the pending calls, reporting whether it was
// there (if not, the read loop or fail already owns it). unsent says the
// request never left, so seq may be reused at once; otherwise seq stays
// reserved until its reply arrives.
func (cc *clientConn) remove(seq uint64, unsent bool) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	p, ok := cc.pending[seq]
	if !ok || p == abandoned {
		return false
	}
	if unsent {
		delete(cc.pending, seq)
		cc.free = append(cc.free, seq)
	} else {
		cc.pending[seq] = abandoned
	}
	return true
}

// maxKeptBuffer bounds the request buffer a connection keeps between calls:
// large enough that calls with bodies of up to a megabyte reuse it rather
// than grow a new one each time.
const maxKeptBuffer = 1 << 20

func (cc *clientConn) send(ctx context.Context, seq uint64, name string, args any) error {
	cc.sendMu.Lock()
	defer cc.sendMu.Unlock()
	body, err := appendMarshal(cc.codec, cc.buf[:0], args)
	if err != nil {
		return fmt.Errorf("dispatch: encoding arguments of %s: %w", name, err)
	}
	h := cc.req.Header
	clear(h)
	h[headerServiceMethod] = name
	h[headerSeq] = strconv.FormatUint(seq, 10)
	if cc.ctype != codec.Msgpack.Name() {
		h[headerContentType] = cc.ctype // absent means msgpack (WIRE.md)
	}
	if dl, ok := ctx.Deadline(); ok {
		h[headerTimeout] = formatTimeout(time.Until(dl))
	}
	for k, v := range outgoing(ctx) {
		h[metadataPrefix+k] = v
	}
	cc.req.Body = body
	err = cc.sock.Send(&cc.req)
	cc.req.Body = nil
	if cap(body) <= maxKeptBuffer {
		cc.buf = body[:0]
	}
	if err != nil {
		if isFrameTooLarge(err) {
			return fmt.Errorf("dispatch: arguments of %s: %w", name, err)
		}
		cc.fail(ErrShutdown)
		cc.sock.Close()
		return fmt.Errorf("dispatch: sending %s: %w", name, err)
	}
	return nil
}

// sendCancel tells the server the caller gave up on seq. Best effort: if it
// cannot be sent, the connection is failing anyway.
func (cc *clientConn) sendCancel(seq uint64) {
	m := transport.Message{Header: map[string]string{headerSeq: strconv.FormatUint(seq, 10), headerCancel: ""}}
	cc.sendMu.Lock()
	defer cc.sendMu.Unlock()
	_ = cc.sock.Send(&m)
}

func (cc *clientConn) readLoop() {
	defer close(cc.done)
	var m transport.Message
	for {
		if err := cc.sock.Recv(&m); err != nil {
			cc.fail(ErrShutdown)
			return
		}
		seq, err := strconv.ParseUint(m.Header[headerSeq], 10, 64)
		if err != nil {
			cc.fail(ErrShutdown)
			cc.sock.Close()
			return
		}
		cc.mu.Lock()
		p, ok := cc.pending[seq]
		if ok {
			delete(cc.pending, seq)
			if p != abandoned {
				// An abandoned number is never reused: a server that does
				// not know Cancel (net/rpc's) answers the Cancel message
				// too, so a second reply to it may still come.
				cc.free = append(cc.free, seq)
			}
		}
		cc.mu.Unlock()
		if p == nil || p == abandoned {
			continue // a reply to a call whose caller gave up, or to none
		}
		if msg, failed := m.Header[headerError]; failed {
			p.err = &Error{Code: Code(m.Header[headerErrorCode]), Message: msg}
		} else if err := cc.codec.Unmarshal(m.Body, p.reply); err != nil {
			p.err = decodeReplyError(p.name, err)
			zero(p.reply)
		}
		p.done <- struct{}{}
	}
}

// decodeReplyError words a reply that cannot be decoded, the same on every
// path. It is not an *Error: the call succeeded, the caller's types are
// wrong.
func decodeReplyError(name string, err error) error {
	return fmt.Errorf("dispatch: decoding reply of %s: %w", name, err)
}

// zero sets *reply to its zero value.
func zero(reply any) { reflect.ValueOf(reply).Elem().SetZero() }

func isFrameTooLarge(err error) bool { return errors.Is(err, transport.ErrFrameTooLarge) }
