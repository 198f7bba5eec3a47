package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// RetryInfo is the detail the tests attach to errors: a type with a slice,
// so that sharing memory between the handler and the caller would show.
type RetryInfo struct {
	After   int
	Reasons []string
}

// DetailArgs asks Detail.Fail for N details whose reason is Size bytes
// long, or (Bad) for one detail that cannot be encoded.
type DetailArgs struct {
	N, Size int
	Bad     bool
}

// errTryLater is the sentinel Detail.Fail gives details to: WithDetail
// must leave it as it is.
var errTryLater = &dispatch.Error{Code: dispatch.CodeUnavailable, Message: "detail: try later"}

// registerDetails registers Detail.Fail, which fails with errTryLater and
// the details its arguments ask for. It borrows, so that direct mode
// carries it.
func registerDetails(t testing.TB, srv *dispatch.Server) {
	require.NoError(t, dispatch.Handle(srv, "Detail.Fail", func(ctx context.Context, args *DetailArgs, reply *int) error {
		e := errTryLater
		if args.Bad {
			e = e.WithDetail(make(chan int))
		}
		for i := range args.N {
			e = e.WithDetail(RetryInfo{After: i, Reasons: []string{strings.Repeat("x", args.Size)}})
		}
		return e
	}, dispatch.Borrows()))
}

// A caller's details are its own on every path, the shortcut's two modes
// included: neither the *Error nor a detail's bytes are the handler's, so
// that a handler changing what it made after returning (a buffer it
// reuses) changes nothing the caller holds.
func TestErrorDetailsShareNoMemory(t *testing.T) {
	acrossPaths(t, nil, func(t *testing.T, p path, e *env) string {
		kept := make(chan *dispatch.Error, 1)
		buf := []byte("handler's")
		require.NoError(t, dispatch.Handle(e.server, "Keep.Fail", func(ctx context.Context, _ *struct{}, _ *int) error {
			r := RetryInfo{After: 1, Reasons: []string{"first"}}
			he := errTryLater.WithDetail(r).WithDetails(dispatch.ErrorDetail{Type: "raw", Value: buf})
			r.Reasons[0] = "changed" // encoded already: the detail keeps "first"
			kept <- he
			return he
		}, dispatch.Borrows()))
		err := e.client.Call(context.Background(), "Keep.Fail", &struct{}{}, new(int))
		var got *dispatch.Error
		require.ErrorAs(t, err, &got)
		he := <-kept
		assert.NotSame(t, he, got, "the caller's *Error is not the handler's")
		copy(buf, "HANDLER'S") // the handler reuses its buffer
		ds := got.Details()
		require.Len(t, ds, 2)
		ds[1].Value[0] = 'X' // the caller changes its copy
		r, ok := dispatch.ErrorDetailAs[RetryInfo](err)
		require.True(t, ok)
		o := fmt.Sprintf("%v %s %s", r.Reasons, got.Details()[1].Value, he.Details()[1].Value)
		assert.Equal(t, "[first] handler's handler's", o)
		return o
	})
}

// A detail decodes only into what its type names; ErrorDetailAs of a type
// the error has no detail of, or of an error that is no *Error, finds none.
func TestErrorDetailAsMisses(t *testing.T) {
	e := (&dispatch.Error{Code: dispatch.CodeAborted, Message: "m"}).WithDetail(RetryInfo{After: 3})
	_, ok := dispatch.ErrorDetailAs[DetailArgs](e)
	assert.False(t, ok)
	_, ok = dispatch.ErrorDetailAs[RetryInfo](errors.New("plain"))
	assert.False(t, ok)
	r, ok := dispatch.ErrorDetailAs[*RetryInfo](fmt.Errorf("wrapped: %w", e))
	assert.True(t, ok)
	assert.Equal(t, 3, r.After)
	assert.Equal(t, "dispatch_test.RetryInfo", dispatch.ErrorDetailType[*RetryInfo]())
	// A detail named as another type, whose bytes do not decode as it.
	bad := e.WithDetails(dispatch.ErrorDetail{Type: dispatch.ErrorDetailType[DetailArgs](), Value: []byte{0xc1}})
	_, ok = dispatch.ErrorDetailAs[DetailArgs](bad)
	assert.False(t, ok)
	assert.Error(t, bad.Details()[1].Decode(new(DetailArgs)))
	assert.True(t, errors.Is(bad, e), "details do not change what the error is")
}

// detailedError is errTryLater with n details, each of 5,000 bytes.
func detailedError(n int) error {
	e := errTryLater
	for i := range n {
		e = e.WithDetail(RetryInfo{After: i, Reasons: []string{strings.Repeat("x", 5000)}})
	}
	return e
}

// A Client takes the Error-Details a server sends as they are when they are
// well formed and within the bound; otherwise the call's error is a
// CodeInternal one that says what was wrong and keeps the server's words,
// never a panic or an allocation for bytes that are not there.
func TestErrorDetailsFromAServer(t *testing.T) {
	tr := memory.New()
	l, err := tr.Listen("")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		sock, err := l.Accept()
		if err != nil {
			return
		}
		defer sock.Close()
		for {
			var m transport.Message
			if sock.Recv(&m) != nil {
				return
			}
			// The request's body is the Error-Details value to answer with.
			var details string
			_ = codec.Msgpack.Unmarshal(m.Body, &details)
			h := map[string]string{"Service-Method": m.Header["Service-Method"], "Seq": m.Header["Seq"],
				"Error": "from the server", "Error-Code": "aborted", "Error-Details": details}
			if sock.Send(&transport.Message{Header: h}) != nil {
				return
			}
		}
	}()
	c, err := dispatch.Dial(context.Background(), tr, l.Addr().String())
	require.NoError(t, err)
	defer func() {
		c.Close()
		l.Close()
		<-served
	}()
	callWith := func(details string) (*dispatch.Error, []dispatch.ErrorDetail) {
		err := c.Call(context.Background(), "Any.Thing", details, new(int))
		var de *dispatch.Error
		require.ErrorAs(t, err, &de)
		return de, de.Details()
	}
	de, ds := callWith("\x01t\x02hi")
	assert.Equal(t, dispatch.CodeAborted, de.Code)
	assert.Equal(t, []dispatch.ErrorDetail{{Type: "t", Value: []byte("hi")}}, ds)

	de, ds = callWith("\x01t\xff\xff\xff\x7fhi")
	assert.Equal(t, dispatch.CodeInternal, de.Code)
	assert.Equal(t, "dispatch: malformed RPC header: Error-Details value: a value runs past its end (the error was: from the server)", de.Message)
	assert.Empty(t, ds)

	de, _ = callWith(strings.Repeat("\x00", dispatch.MaxErrorDetailsSize+1))
	assert.Equal(t, dispatch.CodeInternal, de.Code)
	assert.Equal(t, "dispatch: error details are too large: 65537 bytes, limit 65536 (the error was: from the server)", de.Message)
}
