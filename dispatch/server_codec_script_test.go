package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// ServeCodec given a codec that reads what no real client sends: the
// answers it writes, and that it returns and closes the codec once.

// scriptStep is one request a scriptCodec reads.
type scriptStep struct {
	req       rpc.Request
	headerErr error // ReadRequestHeader fails with it
	args      any   // what ReadRequestBody decodes: a value of the method's argument type
	bodyErr   error // ReadRequestBody fails with it
	// headerPanic and bodyPanic, when not nil, make the read panic with
	// them, as a decoder confused by a hostile stream can.
	headerPanic, bodyPanic any
}

// written is a response a scriptCodec was asked to write.
type written struct {
	seq    uint64
	method string
	err    string
	reply  any // the body's value: an int for *int, struct{}{} for an error's
}

// String shows a long method or error by its ends and its length, so that
// a failure does not print a megabyte.
func (w written) String() string {
	return fmt.Sprintf("{seq %d, method %s, error %s, reply %v}", w.seq, short(w.method), short(w.err), w.reply)
}

func short(s string) string {
	if len(s) <= 80 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…%q (%d bytes)", s[:40], s[len(s)-20:], len(s))
}

// scriptCodec is an rpc.ServerCodec that reads the steps sent on steps (the
// end of the script, when steps is closed, is io.EOF) and keeps each
// response it is asked to write, in order, on out.
type scriptCodec struct {
	steps  chan scriptStep
	out    chan written
	closed chan struct{}
	once   sync.Once
	closes atomic.Int32
	cur    scriptStep // the last step whose header was read: the reader's own
}

func newScript(steps ...scriptStep) *scriptCodec {
	s := &scriptCodec{steps: make(chan scriptStep, len(steps)+8), out: make(chan written, 64), closed: make(chan struct{})}
	for _, st := range steps {
		s.steps <- st
	}
	return s
}

func (s *scriptCodec) ReadRequestHeader(r *rpc.Request) error {
	select {
	case st, ok := <-s.steps:
		if !ok {
			return io.EOF
		}
		if st.headerErr != nil {
			return st.headerErr
		}
		if st.headerPanic != nil {
			panic(st.headerPanic)
		}
		s.cur = st
		*r = st.req
		return nil
	case <-s.closed:
		return net.ErrClosed
	}
}

func (s *scriptCodec) ReadRequestBody(body any) error {
	if s.cur.bodyErr != nil {
		return s.cur.bodyErr
	}
	if s.cur.bodyPanic != nil {
		panic(s.cur.bodyPanic)
	}
	if body != nil && s.cur.args != nil {
		reflect.ValueOf(body).Elem().Set(reflect.ValueOf(s.cur.args))
	}
	return nil
}

func (s *scriptCodec) WriteResponse(r *rpc.Response, body any) error {
	select {
	case <-s.closed:
		return net.ErrClosed
	default:
	}
	w := written{seq: r.Seq, method: r.ServiceMethod, err: r.Error, reply: body}
	if v := reflect.ValueOf(body); v.Kind() == reflect.Pointer {
		w.reply = v.Elem().Interface()
	}
	s.out <- w
	return nil
}

func (s *scriptCodec) Close() error {
	s.closes.Add(1)
	s.once.Do(func() { close(s.closed) })
	return nil
}

// end ends the script: the next header read is io.EOF.
func (s *scriptCodec) end() { close(s.steps) }

// responses returns the responses written so far.
func (s *scriptCodec) responses() []written {
	var got []written
	for {
		select {
		case w := <-s.out:
			got = append(got, w)
		default:
			return got
		}
	}
}

// serveScript runs srv.ServeCodec(sc) and returns a channel closed when it
// returns; the test fails if it has not returned when the test ends.
func serveScript(t *testing.T, srv *dispatch.Server, sc *scriptCodec) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeCodec(sc)
	}()
	t.Cleanup(func() {
		sc.Close()
		recv(t, done, waitLong, "ServeCodec's return")
	})
	return done
}

func assertWritten(t *testing.T, want, got []written) {
	t.Helper()
	if !assert.Len(t, got, len(want), "responses written: %v", got) {
		return
	}
	for i := range want {
		assert.True(t, want[i] == got[i], "response %d: %v, want %v", i, got[i], want[i])
	}
}

// TestServeCodecScriptedNames: the service/method names no net/rpc client
// sends — empty, without a dot, a megabyte long — are each answered with
// net/rpc's words (the name echoed whole, as net/rpc does) under their own
// Seq, and the call after them is served.
func TestServeCodecScriptedNames(t *testing.T) {
	srv := arithServer(t, nil)
	long := strings.Repeat("x", 1<<20)
	sc := newScript(
		scriptStep{req: rpc.Request{ServiceMethod: "", Seq: 1}},
		scriptStep{req: rpc.Request{ServiceMethod: "NoDot", Seq: 2}},
		scriptStep{req: rpc.Request{ServiceMethod: long, Seq: 3}},
		scriptStep{req: rpc.Request{ServiceMethod: "Arith." + long, Seq: 4}},
		scriptStep{req: rpc.Request{ServiceMethod: long + ".M", Seq: 5}},
		scriptStep{req: rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 6}, args: Args{6, 7}},
	)
	sc.end()
	done := serveScript(t, srv, sc)
	recv(t, done, waitLong, "ServeCodec's return at the end of the script")
	none := struct{}{}
	assertWritten(t, []written{
		{1, "", "rpc: service/method request ill-formed: ", none},
		{2, "NoDot", "rpc: service/method request ill-formed: NoDot", none},
		{3, long, "rpc: service/method request ill-formed: " + long, none},
		{4, "Arith." + long, "rpc: can't find method Arith." + long, none},
		{5, long + ".M", "rpc: can't find service " + long + ".M", none},
		{6, "Arith.Multiply", "", 42},
	}, sc.responses())
	assert.Equal(t, int32(1), sc.closes.Load(), "the codec's Close calls")
	assertServes(t, srv)
}

// TestServeCodecScriptedSeqReused: calls that share a Seq while they are
// in flight are each served, and each response carries the Seq of its own
// request, written when its own handler returns.
func TestServeCodecScriptedSeqReused(t *testing.T) {
	srv := arithServer(t, nil)
	started := make(chan int, 4)
	release := map[int]chan struct{}{}
	for i := 1; i <= 4; i++ {
		release[i] = make(chan struct{})
	}
	require.NoError(t, dispatch.Handle(srv, "Gate.Hold", func(ctx context.Context, a *int, r *int) error {
		started <- *a
		<-release[*a]
		*r = *a * 10
		return nil
	}))
	hold := func(seq uint64, a int) scriptStep {
		return scriptStep{req: rpc.Request{ServiceMethod: "Gate.Hold", Seq: seq}, args: a}
	}
	sc := newScript(hold(7, 1), hold(7, 2), hold(7, 3), hold(8, 4))
	done := serveScript(t, srv, sc)
	seen := map[int]bool{}
	for range 4 {
		seen[recv(t, started, waitLong, "a Gate.Hold call")] = true
	}
	assert.Len(t, seen, 4, "every call is in flight at once")
	for _, step := range []struct {
		release int
		want    written
	}{
		{3, written{7, "Gate.Hold", "", 30}},
		{1, written{7, "Gate.Hold", "", 10}},
		{4, written{8, "Gate.Hold", "", 40}},
		{2, written{7, "Gate.Hold", "", 20}},
	} {
		close(release[step.release])
		got := recv(t, sc.out, waitLong, "the response of the call released")
		assert.Equal(t, step.want, got)
	}
	sc.end()
	recv(t, done, waitLong, "ServeCodec's return at the end of the script")
	assert.Empty(t, sc.responses())
	assertServes(t, srv)
}

// TestServeCodecScriptedBodyError: a body the codec fails to read, after a
// good header, is answered with the codec's words and the connection goes
// on (as net/rpc's Server does: the codec said where the next header is).
// When the body of a call already refused cannot be read past, the refusal
// is answered and ServeCodec ends: the next header cannot be found.
func TestServeCodecScriptedBodyError(t *testing.T) {
	srv := arithServer(t, nil)
	none := struct{}{}

	t.Run("after a good header", func(t *testing.T) {
		sc := newScript(
			scriptStep{req: rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 1}, bodyErr: errors.New("script: body cut short")},
			scriptStep{req: rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 2}, args: Args{2, 3}},
		)
		sc.end()
		recv(t, serveScript(t, srv, sc), waitLong, "ServeCodec's return at the end of the script")
		assertWritten(t, []written{
			{1, "Arith.Multiply", "dispatch: decoding arguments of Arith.Multiply: script: body cut short", none},
			{2, "Arith.Multiply", "", 6},
		}, sc.responses())
		assert.Equal(t, int32(1), sc.closes.Load(), "the codec's Close calls")
	})

	t.Run("of a refused call", func(t *testing.T) {
		sc := newScript(
			scriptStep{req: rpc.Request{ServiceMethod: "Arith.Nope", Seq: 1}, bodyErr: errors.New("script: body cut short")},
			scriptStep{req: rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 2}, args: Args{2, 3}},
		)
		recv(t, serveScript(t, srv, sc), waitLong, "ServeCodec's return after a body it could not skip")
		assertWritten(t, []written{{1, "Arith.Nope", "rpc: can't find method Arith.Nope", none}}, sc.responses())
		assert.Len(t, sc.steps, 1, "the request after it is never read")
		assert.Equal(t, int32(1), sc.closes.Load(), "the codec's Close calls")
	})
	assertServes(t, srv)
}

// TestServeCodecScriptedHeaderError: a header the codec fails to read
// (not the end of the stream) ends the connection: it is logged at Debug
// with the codec's error, the context of the call in flight ends, that
// call is still answered (its handler's error) before the codec is closed,
// once, and ServeCodec returns.
func TestServeCodecScriptedHeaderError(t *testing.T) {
	log := &errLog{}
	a := newArith()
	srv := arithServer(t, a, dispatch.WithLogger(log.logger()))
	sc := newScript(scriptStep{req: rpc.Request{ServiceMethod: "Arith.Block", Seq: 1}, args: Args{}})
	done := serveScript(t, srv, sc)
	recv(t, a.started, waitLong, "Arith.Block")
	garbled := errors.New("script: header garbled")
	sc.steps <- scriptStep{headerErr: garbled}
	assert.ErrorIs(t, recv(t, a.canceled, waitLong, "the end of Block's context"), context.Canceled)
	recv(t, done, waitLong, "ServeCodec's return after a header it could not read")
	assertWritten(t, []written{{1, "Arith.Block", "context canceled", struct{}{}}}, sc.responses())
	assert.Equal(t, int32(1), sc.closes.Load(), "the codec's Close calls")
	assert.Equal(t, []error{garbled}, log.errs("dispatch: net/rpc connection ended"))
	assertServes(t, srv)
}

// TestServeCodecScriptedPanic: a codec that panics reading (as encoding/gob
// can on a stream made to confuse it) does not take the process down: a
// body's panic is answered as a body that cannot be decoded, and the
// connection goes on; a header's panic ends the connection, as a header
// that cannot be read does. The Server then serves new clients.
func TestServeCodecScriptedPanic(t *testing.T) {
	srv := arithServer(t, nil)
	sc := newScript(
		scriptStep{req: rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 1}, bodyPanic: "runtime error: a nil pointer"},
		scriptStep{req: rpc.Request{ServiceMethod: "Arith.Multiply", Seq: 2}, args: Args{6, 7}},
		scriptStep{headerPanic: "confused"},
	)
	done := serveScript(t, srv, sc)
	recv(t, done, waitLong, "ServeCodec's return after the header's panic")
	got := sc.responses()
	require.Len(t, got, 2, "responses written: %v", got)
	assert.Equal(t, uint64(1), got[0].seq)
	assert.Equal(t, "dispatch: decoding arguments of Arith.Multiply: dispatch: the net/rpc codec panicked reading: runtime error: a nil pointer", got[0].err)
	assert.Equal(t, written{2, "Arith.Multiply", "", 42}, got[1])
	assert.Equal(t, int32(1), sc.closes.Load(), "the codec's Close calls")
	assertServes(t, srv)
}
