package codec_test

// The behaviours Go's own net/rpc tests check ($GOROOT/src/net/rpc), checked
// again here over codec.NewClientCodec and codec.NewServerCodec on Sockets
// made by tcp.NewSocket (both ends of net.Pipe, or of a loopback TCP
// connection). The tests are written anew; only the list of behaviours is
// taken from Go's. Go's test → the test here:
//
//   - TestRPC (Add, Mul, out-of-order Go, Scan, String, "net.rpc.Arith") → TestNetRPCCalls, TestNetRPCGoDone
//   - TestRPC (Embed.Exported: method promoted from an unexported embedded type) → TestNetRPCCalls
//   - TestRPC (Div: a method's error) → TestNetRPCMethodError
//   - TestRPC (BadOperation, unknown service) → TestNetRPCUnroutable
//   - TestRPC (bad type: the reply passed as the args) → TestNetRPCWrongArgType
//   - testNewServerRPC (a second name for a service) → TestNetRPCCalls
//   - TestBuiltinTypes (map, slice and array replies) → TestNetRPCBuiltinReplies
//   - TestServeRequest (one request served synchronously; nil args) → TestNetRPCServeRequest, TestNetRPCNilAndEmptyArgs
//   - TestRegistrationError → TestNetRPCRegistrationErrors
//   - TestSendDeadlock, TestClientWriteError (WriteRequest fails) → TestNetRPCClientWriteErrors
//   - TestTCPClose (a call over a real TCP connection) → TestNetRPCOverLoopbackTCP
//   - TestShutdown (client half-closes with a call in flight; its reply still comes) → TestNetRPCOverLoopbackTCP
//   - TestErrorAfterClientClose → TestNetRPCClosedClient
//   - TestCloseCodec (Client.Close closes the codec) → TestNetRPCClosedClient
//   - TestGobError (a reply the server cannot encode ends the connection, no hang) → TestNetRPCUnencodableReply
//   - benchmarkEndToEndAsync's many goroutines → TestNetRPCConcurrentCalls
//   - not in Go's suite (API review) → TestNetRPCReplyTypeMismatch, TestNetRPCLargePayloads, TestNetRPCServerDropsMidCall
//   - not in Go's suite (WIRE.md rules; each failed until its defect was fixed) → TestNetRPCEmptyBodies, TestNetRPCReplyOfAnotherTypeIntoNonZero
//
// Skipped:
//   - TestGobError's gob type registration and gob's error text ("reading body unexpected EOF"): gob-specific.
//   - TestHTTP, testHTTPRPC, TestCountMallocsOverHTTP: rpc.DialHTTP and HandleHTTP are hard-wired to gob.
//   - TestAcceptExitAfterListenerClose: rpc.Server.Accept serves each connection with gob (ServeConn).
//   - TestCountMallocs, the benchmarks: allocation counts and timings, not behaviours.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/rpc"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/tcp"
)

// Operands are the arguments of most Ledger methods.
type Operands struct{ X, Y int }

// Total is their reply. Its field names none of Operands', so the one
// passed where the other is expected is a message of another type.
type Total struct{ N int }

// Payload carries large bodies both as msgpack bin and str values.
type Payload struct {
	Data []byte
	Text string
}

// Ledger is the service under test. Hold, the one method that uses its
// channels, tells entered it has started and then waits for release.
type Ledger struct {
	entered chan struct{}
	release chan struct{}
}

func (*Ledger) Sum(in Operands, out *Total) error {
	out.N = in.X + in.Y
	return nil
}

func (*Ledger) Product(in *Operands, out *Total) error {
	out.N = in.X * in.Y
	return nil
}

var errDivisionByZero = errors.New("ledger: division by zero")

func (*Ledger) Quotient(in Operands, out *Total) error {
	if in.Y == 0 {
		return errDivisionByZero
	}
	out.N = in.X / in.Y
	return nil
}

// Parse takes an argument that is not a struct.
func (*Ledger) Parse(in string, out *Total) error {
	n, err := strconv.Atoi(in)
	out.N = n
	return err
}

// Describe answers with a reply that is not a struct.
func (*Ledger) Describe(in *Operands, out *string) error {
	*out = fmt.Sprintf("%d and %d", in.X, in.Y)
	return nil
}

// Nap sleeps for X milliseconds, then sums.
func (*Ledger) Nap(in Operands, out *Total) error {
	time.Sleep(time.Duration(in.X) * time.Millisecond)
	out.N = in.X + in.Y
	return nil
}

// Hold sums once the test lets it.
func (l *Ledger) Hold(in Operands, out *Total) error {
	l.entered <- struct{}{}
	<-l.release
	out.N = in.X + in.Y
	return nil
}

// Nothing takes and gives the empty struct.
func (*Ledger) Nothing(in struct{}, out *struct{}) error { return nil }

// Mirror echoes a Payload, and Bytes echoes raw bytes.
func (*Ledger) Mirror(in Payload, out *Payload) error {
	*out = in
	return nil
}

func (*Ledger) Bytes(in []byte, out *[]byte) error {
	*out = append((*out)[:0], in...)
	return nil
}

// Channel answers with a reply msgpack cannot encode.
func (*Ledger) Channel(in Operands, out *chan int) error {
	*out = make(chan int)
	return nil
}

// Tables answers with builtin container types.
type Tables struct{}

func (Tables) Map(in *Operands, out *map[int]int) error {
	*out = map[int]int{in.X: in.Y}
	return nil
}

func (Tables) Slice(in *Operands, out *[]int) error {
	*out = append((*out)[:0], in.X, in.Y)
	return nil
}

func (Tables) Array(in *Operands, out *[2]int) error {
	*out = [2]int{in.X, in.Y}
	return nil
}

// counter's exported method is promoted to Front, which is what gets
// registered.
type counter int

func (*counter) Tally(in Operands, out *Total) error {
	out.N = in.X - in.Y
	return nil
}

type Front struct{ counter }

// Types net/rpc must refuse to register.
type (
	ReplyByValue  int
	PrivateArgs   int
	PrivateReply  int
	ValueReceiver int
	unexported    struct{}
)

func (*ReplyByValue) Bad(in *Operands, out Total) error       { return nil }
func (*PrivateArgs) Bad(in *unexported, out *Total) error     { return nil }
func (*PrivateReply) Bad(in *Operands, out *unexported) error { return nil }
func (*ValueReceiver) Fine(in *Operands, out *Total) error    { return nil }

// newSuiteServer returns a server with a Ledger (also under two more
// names), a Tables and a Front.
func newSuiteServer(t *testing.T, l *Ledger) *rpc.Server {
	t.Helper()
	if l == nil {
		l = &Ledger{}
	}
	srv := rpc.NewServer()
	require.NoError(t, srv.Register(l))
	require.NoError(t, srv.RegisterName("acme.v1.Ledger", l))
	require.NoError(t, srv.RegisterName("Backup", l))
	require.NoError(t, srv.Register(Tables{}))
	require.NoError(t, srv.Register(new(Front)))
	return srv
}

// tcpSocketPair runs tcp.NewSocket on both ends of a and b at once (the
// preface exchange needs both) and returns the two Sockets, closed when the
// test ends.
func tcpSocketPair(t *testing.T, a, b net.Conn) (sa, sb transport.Socket) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		s   transport.Socket
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := tcp.NewSocket(ctx, b)
		ch <- result{s, err}
	}()
	sa, errA := tcp.NewSocket(ctx, a)
	r := <-ch
	if sa != nil {
		t.Cleanup(func() { sa.Close() })
	}
	if r.s != nil {
		t.Cleanup(func() { r.s.Close() })
	}
	require.NoError(t, errA)
	require.NoError(t, r.err)
	return sa, r.s
}

// pipeSockets returns Sockets on the two ends of a net.Pipe, and the
// server's end of the pipe.
func pipeSockets(t *testing.T) (csock, ssock transport.Socket, sconn net.Conn) {
	t.Helper()
	cconn, sconn := net.Pipe()
	csock, ssock = tcpSocketPair(t, cconn, sconn)
	return csock, ssock, sconn
}

// loopbackSockets returns Sockets on the two ends of a loopback TCP
// connection, and the client's end of that connection.
func loopbackSockets(t *testing.T) (csock, ssock transport.Socket, cconn *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		assert.NoError(t, err)
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	sconn := <-accepted
	if sconn == nil {
		c.Close()
		t.FailNow()
	}
	csock, ssock = tcpSocketPair(t, c, sconn)
	return csock, ssock, c.(*net.TCPConn)
}

// serveSuite serves srv over ssock and returns a client over csock. When
// the test ends the client is closed and ServeCodec has returned. The
// returned channel is closed when ServeCodec returns.
func serveSuite(t *testing.T, srv *rpc.Server, csock, ssock transport.Socket) (*rpc.Client, <-chan struct{}) {
	t.Helper()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeCodec(codec.NewServerCodec(ssock))
	}()
	client := rpc.NewClientWithCodec(codec.NewClientCodec(csock))
	t.Cleanup(func() {
		client.Close()
		select {
		case <-served:
		case <-time.After(20 * time.Second):
			t.Error("ServeCodec did not return after the client closed")
		}
	})
	return client, served
}

// pipeClient serves a new suite server over a pipe and returns its client.
func pipeClient(t *testing.T) *rpc.Client {
	t.Helper()
	csock, ssock, _ := pipeSockets(t)
	client, _ := serveSuite(t, newSuiteServer(t, nil), csock, ssock)
	return client
}

// wait returns the call once it is done, failing the test if it takes long:
// no behaviour here may hang.
func wait(t *testing.T, call *rpc.Call) *rpc.Call {
	t.Helper()
	select {
	case c := <-call.Done:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("call %s did not finish", call.ServiceMethod)
		return nil
	}
}

// assertUsable checks that client still makes calls.
func assertUsable(t *testing.T, client *rpc.Client) {
	t.Helper()
	var total Total
	if assert.NoError(t, client.Call("Ledger.Sum", Operands{40, 2}, &total), "the connection is still usable") {
		assert.Equal(t, 42, total.N)
	}
}

func TestNetRPCCalls(t *testing.T) {
	client := pipeClient(t)

	tests := []struct {
		method string
		args   any
		want   int
	}{
		{"Ledger.Sum", Operands{7, 8}, 15},         // value args, value parameter
		{"Ledger.Sum", &Operands{-7, 8}, 1},        // pointer args, value parameter
		{"Ledger.Product", Operands{7, 8}, 56},     // value args, pointer parameter
		{"Ledger.Product", &Operands{-3, 11}, -33}, // pointer args, pointer parameter
		{"Front.Tally", Operands{20, 5}, 15},       // promoted from an unexported embedded type
		{"acme.v1.Ledger.Sum", Operands{1, 2}, 3},  // a service name with dots in it
		{"Backup.Product", &Operands{6, 7}, 42},    // a second name for the same service
		{"Ledger.Parse", "12345", 12345},           // args that are not a struct
		{"Ledger.Parse", new("-9"), -9},            // a pointer to them
	}
	for _, tt := range tests {
		var total Total
		if assert.NoError(t, client.Call(tt.method, tt.args, &total), "%s(%+v)", tt.method, tt.args) {
			assert.Equal(t, tt.want, total.N, "%s(%+v)", tt.method, tt.args)
		}
	}

	// A reply that is not a struct.
	var s string
	require.NoError(t, client.Call("Ledger.Describe", &Operands{27, 35}, &s))
	assert.Equal(t, "27 and 35", s)

	// The reply is decoded into what the caller passed, over what it held.
	total := Total{N: 99}
	require.NoError(t, client.Call("Ledger.Sum", Operands{0, 0}, &total))
	assert.Equal(t, 0, total.N)
}

func TestNetRPCBuiltinReplies(t *testing.T) {
	client := pipeClient(t)

	m := map[int]int{}
	require.NoError(t, client.Call("Tables.Map", &Operands{7, 8}, &m))
	assert.Equal(t, map[int]int{7: 8}, m)

	var sl []int
	require.NoError(t, client.Call("Tables.Slice", &Operands{7, 8}, &sl))
	assert.Equal(t, []int{7, 8}, sl)

	var arr [2]int
	require.NoError(t, client.Call("Tables.Array", &Operands{7, 8}, &arr))
	assert.Equal(t, [2]int{7, 8}, arr)
}

func TestNetRPCMethodError(t *testing.T) {
	client := pipeClient(t)

	var total Total
	err := client.Call("Ledger.Quotient", Operands{7, 0}, &total)
	require.Error(t, err)
	assert.Equal(t, rpc.ServerError(errDivisionByZero.Error()), err, "the message, as an rpc.ServerError")

	// A method's error is an answer, not a failure of the connection.
	require.NoError(t, client.Call("Ledger.Quotient", Operands{7, 2}, &total))
	assert.Equal(t, 3, total.N)
}

func TestNetRPCUnroutable(t *testing.T) {
	client := pipeClient(t)

	tests := []struct{ method, want string }{
		{"Nowhere.Sum", "rpc: can't find service Nowhere.Sum"},
		{".Sum", "rpc: can't find service .Sum"},
		{"Ledger.Missing", "rpc: can't find method Ledger.Missing"},
		{"Ledger.", "rpc: can't find method Ledger."},
		{"Ledger.sum", "rpc: can't find method Ledger.sum"}, // unexported methods are not served
		{"LedgerSum", "rpc: service/method request ill-formed: LedgerSum"},
		{"", "rpc: service/method request ill-formed: "},
	}
	for _, tt := range tests {
		var total Total
		err := client.Call(tt.method, Operands{1, 2}, &total)
		var se rpc.ServerError
		if assert.ErrorAs(t, err, &se, "%q", tt.method) {
			assert.Equal(t, tt.want, string(se))
		}
		assertUsable(t, client)
	}
}

func TestNetRPCWrongArgType(t *testing.T) {
	client := pipeClient(t)

	// The reply type passed as the arguments: a msgpack map whose keys name
	// no field of Operands.
	total := Total{N: 5}
	err := client.Call("Ledger.Sum", &total, &total)
	var se rpc.ServerError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "type")
	assert.Contains(t, err.Error(), codec.ErrNoFieldsMatched.Error())
	assert.Equal(t, 5, total.N, "a failed call leaves the reply alone")

	// The zero reply too: its map still names a field, just not one of
	// Operands'.
	err = client.Call("Ledger.Product", &Total{}, &total)
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "type")
	assert.Contains(t, err.Error(), codec.ErrNoFieldsMatched.Error())

	// Arguments of another kind altogether.
	for _, args := range []any{"seven", 7, true} {
		err = client.Call("Ledger.Sum", args, &total)
		assert.ErrorAs(t, err, &se, "%#v", args)
	}
	err = client.Call("Ledger.Parse", Operands{1, 2}, &total)
	assert.ErrorAs(t, err, &se)

	assertUsable(t, client)
}

func TestNetRPCNilAndEmptyArgs(t *testing.T) {
	client := pipeClient(t)

	// nil arguments reach the method as zero values (WIRE.md, section 3),
	// whether it takes a value or a pointer.
	for _, method := range []string{"Ledger.Sum", "Ledger.Product"} {
		total := Total{N: 99}
		require.NoError(t, client.Call(method, nil, &total), method)
		assert.Equal(t, 0, total.N, method)
	}
	var s string
	require.NoError(t, client.Call("Ledger.Describe", nil, &s))
	assert.Equal(t, "0 and 0", s)

	// Empty arguments and an empty reply.
	var out struct{}
	require.NoError(t, client.Call("Ledger.Nothing", struct{}{}, &out))
	require.NoError(t, client.Call("Ledger.Nothing", &struct{}{}, &out))
	require.NoError(t, client.Call("Ledger.Nothing", nil, &out))
	total := Total{N: 99}
	require.NoError(t, client.Call("Ledger.Sum", Operands{}, &total))
	assert.Equal(t, 0, total.N)

	// An empty map is the zero struct, not a message of another type.
	require.NoError(t, client.Call("Ledger.Sum", map[string]int{}, &total))
	assert.Equal(t, 0, total.N)

	// A nil reply discards the answer.
	require.NoError(t, client.Call("Ledger.Sum", Operands{1, 2}, nil))
}

func TestNetRPCServeRequest(t *testing.T) {
	csock, ssock, _ := pipeSockets(t)
	srv := newSuiteServer(t, nil)
	sc := codec.NewServerCodec(ssock)
	cc := codec.NewClientCodec(csock)
	defer sc.Close()
	defer cc.Close()

	// roundTrip sends one request, lets ServeRequest serve it and returns
	// what ServeRequest returned and the response.
	roundTrip := func(seq uint64, method string, args, reply any) (served error, resp rpc.Response, body error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- srv.ServeRequest(sc) }()
		require.NoError(t, cc.WriteRequest(&rpc.Request{ServiceMethod: method, Seq: seq}, args))
		require.NoError(t, cc.ReadResponseHeader(&resp))
		if resp.Error != "" {
			reply = nil // net/rpc discards a failed call's body
		}
		body = cc.ReadResponseBody(reply)
		select {
		case served = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("ServeRequest did not return")
		}
		return served, resp, body
	}

	var total Total
	served, resp, body := roundTrip(7, "Ledger.Sum", Operands{7, 8}, &total)
	require.NoError(t, served)
	require.NoError(t, body)
	assert.Equal(t, rpc.Response{ServiceMethod: "Ledger.Sum", Seq: 7}, resp)
	assert.Equal(t, 15, total.N)

	// Arguments in msgpack's own nil: zero values.
	total = Total{N: 99}
	served, resp, body = roundTrip(8, "Ledger.Product", nil, &total)
	require.NoError(t, served)
	require.NoError(t, body)
	assert.Empty(t, resp.Error)
	assert.Equal(t, 0, total.N)

	// Arguments that cannot be read: ServeRequest returns the error and
	// the caller gets it as its answer.
	served, resp, body = roundTrip(9, "Ledger.Sum", codec.Raw{0xc1}, &total)
	require.ErrorIs(t, served, codec.ErrMalformed)
	require.NoError(t, body)
	assert.Equal(t, uint64(9), resp.Seq)
	assert.Equal(t, served.Error(), resp.Error)

	// An unknown method likewise.
	served, resp, _ = roundTrip(10, "Ledger.Missing", Operands{}, &total)
	require.Error(t, served)
	assert.Equal(t, "rpc: can't find method Ledger.Missing", resp.Error)

	// A method's own error is an answer: ServeRequest itself succeeded.
	served, resp, _ = roundTrip(11, "Ledger.Quotient", Operands{1, 0}, &total)
	require.NoError(t, served)
	assert.Equal(t, errDivisionByZero.Error(), resp.Error)

	// When the caller is gone there is no request to serve.
	require.NoError(t, cc.Close())
	assert.ErrorIs(t, srv.ServeRequest(sc), io.EOF)
}

func TestNetRPCRegistrationErrors(t *testing.T) {
	srv := rpc.NewServer()
	bad := []struct {
		rcvr any
		hint string
	}{
		{new(ReplyByValue), "ReplyByValue"},
		{new(PrivateArgs), "PrivateArgs"},
		{new(PrivateReply), "PrivateReply"},
		{ValueReceiver(0), "pointer"}, // its method needs a pointer receiver
	}
	codecErrs := []error{codec.ErrMalformed, codec.ErrTooDeep, codec.ErrNilPointer,
		codec.ErrNoFieldsMatched, codec.ErrMalformedHeader, codec.ErrContentType}
	for _, b := range bad {
		err := srv.Register(b.rcvr)
		if !assert.Error(t, err, "%T", b.rcvr) {
			continue
		}
		// net/rpc's own refusal, made before any codec is involved.
		assert.True(t, strings.HasPrefix(err.Error(), "rpc.Register: "), "%T: %v", b.rcvr, err)
		assert.Contains(t, err.Error(), b.hint)
		for _, ce := range codecErrs {
			assert.NotErrorIs(t, err, ce)
		}
	}
	err := srv.RegisterName("", new(Ledger))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "rpc.Register: "), "%v", err)
	err = srv.Register(new(Ledger))
	require.NoError(t, err)
	err = srv.Register(new(Ledger))
	require.Error(t, err, "a second service of the same name")
	assert.Contains(t, err.Error(), "already defined")

	// The server still serves over the codec what it did register, and
	// nothing it refused.
	csock, ssock, _ := pipeSockets(t)
	client, _ := serveSuite(t, srv, csock, ssock)
	assertUsable(t, client)
	var total Total
	err = client.Call("ValueReceiver.Fine", Operands{}, &total)
	assert.Equal(t, rpc.ServerError("rpc: can't find service ValueReceiver.Fine"), err)
}

func TestNetRPCConcurrentCalls(t *testing.T) {
	client := pipeClient(t)

	const goroutines, calls = 32, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				in := Operands{g, i * 1000}
				var total Total
				method := "Ledger.Sum"
				want := in.X + in.Y
				if i%2 == 1 {
					method, want = "Ledger.Product", in.X*in.Y
				}
				if !assert.NoError(t, client.Call(method, in, &total)) {
					return
				}
				assert.Equal(t, want, total.N, "%s(%+v)", method, in)
			}
		})
	}
	wg.Wait()
}

func TestNetRPCGoDone(t *testing.T) {
	l := &Ledger{entered: make(chan struct{}), release: make(chan struct{})}
	csock, ssock, _ := pipeSockets(t)
	client, _ := serveSuite(t, newSuiteServer(t, l), csock, ssock)

	// Replies arrive in the order they are ready, not the order of the
	// calls: a held call does not hold up the ones after it.
	held := client.Go("Ledger.Hold", Operands{1, 1}, new(Total), make(chan *rpc.Call, 1))
	select {
	case <-l.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("Hold did not start")
	}

	const n = 20
	done := make(chan *rpc.Call, n)
	for i := range n {
		c := client.Go("Ledger.Sum", Operands{i, i * i}, new(Total), done)
		assert.True(t, c.Done == done, "Go returns the channel it was given")
	}
	seen := map[int]bool{}
	for range n {
		var c *rpc.Call
		select {
		case c = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("calls did not finish")
		}
		require.NoError(t, c.Error)
		in := c.Args.(Operands)
		assert.Equal(t, in.X+in.Y, c.Reply.(*Total).N)
		seen[in.X] = true
	}
	assert.Len(t, seen, n)
	select {
	case <-held.Done:
		t.Fatal("the held call finished before it was released")
	default:
	}

	close(l.release)
	c := wait(t, held)
	require.NoError(t, c.Error)
	assert.Equal(t, 2, c.Reply.(*Total).N)

	// Without a channel of its own, Go makes one.
	c = wait(t, client.Go("Ledger.Product", &Operands{3, 4}, new(Total), nil))
	require.NoError(t, c.Error)
	assert.Equal(t, 12, c.Reply.(*Total).N)

	// Failed calls are reported on the channel too.
	c = wait(t, client.Go("Ledger.Quotient", Operands{3, 0}, new(Total), make(chan *rpc.Call, 1)))
	assert.Equal(t, rpc.ServerError(errDivisionByZero.Error()), c.Error)
}

func TestNetRPCClosedClient(t *testing.T) {
	csock, ssock, _ := pipeSockets(t)
	client, served := serveSuite(t, newSuiteServer(t, nil), csock, ssock)
	assertUsable(t, client)

	require.NoError(t, client.Close())

	// Closing the client closed its codec, and so its socket; the server
	// saw the connection end.
	assert.ErrorIs(t, csock.Send(&transport.Message{}), transport.ErrClosed)
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("ServeCodec did not return after the client closed")
	}

	var total Total
	assert.Equal(t, rpc.ErrShutdown, client.Call("Ledger.Sum", Operands{1, 2}, &total))
	c := wait(t, client.Go("Ledger.Sum", Operands{1, 2}, &total, nil))
	assert.Equal(t, rpc.ErrShutdown, c.Error)
	assert.Equal(t, rpc.ErrShutdown, client.Close(), "a second Close")
}

func TestNetRPCServerDropsMidCall(t *testing.T) {
	l := &Ledger{entered: make(chan struct{}), release: make(chan struct{})}
	csock, ssock, sconn := pipeSockets(t)
	client, served := serveSuite(t, newSuiteServer(t, l), csock, ssock)

	call := client.Go("Ledger.Hold", Operands{1, 2}, new(Total), nil)
	select {
	case <-l.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("Hold did not start")
	}

	// The server's connection goes away while the method runs: the
	// pending call fails at once, without waiting for the method.
	require.NoError(t, sconn.Close())
	c := wait(t, call)
	assert.ErrorIs(t, c.Error, io.ErrUnexpectedEOF)

	var total Total
	assert.Equal(t, rpc.ErrShutdown, client.Call("Ledger.Sum", Operands{1, 2}, &total))

	// The server waits for the method it started, then stops.
	close(l.release)
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("ServeCodec did not return")
	}
}

func TestNetRPCUnencodableReply(t *testing.T) {
	csock, ssock, _ := pipeSockets(t)
	client, served := serveSuite(t, newSuiteServer(t, nil), csock, ssock)

	// The server cannot send the answer, so it ends the connection rather
	// than leave the call waiting forever.
	var ch chan int
	err := client.Call("Ledger.Channel", Operands{}, &ch)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Nil(t, ch)

	var total Total
	assert.Equal(t, rpc.ErrShutdown, client.Call("Ledger.Sum", Operands{1, 2}, &total))
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("ServeCodec did not return")
	}
}

func TestNetRPCReplyTypeMismatch(t *testing.T) {
	tests := []struct {
		name   string
		method string
		args   any
		reply  any
		want   string
	}{
		{"struct into string", "Ledger.Sum", Operands{1, 2}, new(string), ""},
		{"string into int", "Ledger.Describe", &Operands{1, 2}, new(int), ""},
		// A map of another struct's fields is refused, not read as zeros.
		{"another struct", "Ledger.Sum", Operands{1, 2}, &Operands{}, codec.ErrNoFieldsMatched.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := pipeClient(t)
			assertUsable(t, client)

			// The answer cannot be decoded into what the caller passed:
			// the call fails with the client's own error, and net/rpc
			// then ends the client, as it does on any body it cannot
			// read.
			err := client.Call(tt.method, tt.args, tt.reply)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "reading body "), "%v", err)
			assert.NotErrorAs(t, err, new(rpc.ServerError), "the client's own error, not the server's")
			assert.Contains(t, err.Error(), tt.want)
			// A call made as the client ends may see the same error
			// instead (net/rpc fails its pending calls with it); the
			// next one is refused.
			var total Total
			assert.Error(t, client.Call("Ledger.Sum", Operands{1, 2}, &total))
			assert.Equal(t, rpc.ErrShutdown, client.Call("Ledger.Sum", Operands{1, 2}, &total))
		})
	}
}

// The reply of another type, as in TestNetRPCReplyTypeMismatch, but into a
// reply that already holds a value: net/rpc decodes into what the caller
// passed, so the client adapter zeroes it first, as every path here does.
func TestNetRPCReplyOfAnotherTypeIntoNonZero(t *testing.T) {
	client := pipeClient(t)
	reply := Operands{X: 5}
	err := client.Call("Ledger.Sum", Operands{1, 2}, &reply)
	require.Error(t, err, "the map {N: 3} names no field of Operands; the reply is left %+v", reply)
	assert.Contains(t, err.Error(), codec.ErrNoFieldsMatched.Error())
}

// WIRE.md, section 3: "An empty body means nil arguments: the server hands
// the handler zero values, whatever the codec", and "A caller reads an
// empty body as a zero reply". A dispatch client sends nil arguments so.
func TestNetRPCEmptyBodies(t *testing.T) {
	csock, ssock, _ := pipeSockets(t)
	srv := newSuiteServer(t, nil)
	sc := codec.NewServerCodec(ssock)
	cc := codec.NewClientCodec(csock)
	defer sc.Close()
	defer cc.Close()

	// A request with an empty body.
	done := make(chan error, 1)
	go func() { done <- srv.ServeRequest(sc) }()
	require.NoError(t, cc.WriteRequest(&rpc.Request{ServiceMethod: "Ledger.Product", Seq: 1}, codec.Raw(nil)))
	var resp rpc.Response
	require.NoError(t, cc.ReadResponseHeader(&resp))
	var reply any = &Total{N: 99}
	if resp.Error != "" {
		reply = nil
	}
	require.NoError(t, cc.ReadResponseBody(reply))
	assert.NoError(t, <-done, "ServeRequest")
	assert.Empty(t, resp.Error)
	assert.Equal(t, &Total{}, reply)

	// A response with an empty body.
	go func() {
		done <- sc.WriteResponse(&rpc.Response{ServiceMethod: "Ledger.Sum", Seq: 2}, codec.Raw(nil))
	}()
	resp = rpc.Response{}
	require.NoError(t, cc.ReadResponseHeader(&resp))
	total := Total{}
	assert.NoError(t, cc.ReadResponseBody(&total), "an empty response body")
	assert.Equal(t, Total{}, total)
	require.NoError(t, <-done)
}

func TestNetRPCClientWriteErrors(t *testing.T) {
	client := pipeClient(t)

	// Arguments the codec cannot encode: the call fails with the codec's
	// error, before anything is sent, and again the next time (the client
	// does not deadlock on its own failure).
	for range 2 {
		done := make(chan error, 1)
		go func() {
			var total Total
			done <- client.Call("Ledger.Sum", make(chan int), &total)
		}()
		select {
		case err := <-done:
			require.Error(t, err)
			assert.NotErrorAs(t, err, new(rpc.ServerError))
			assert.NotErrorIs(t, err, rpc.ErrShutdown)
		case <-time.After(20 * time.Second):
			t.Fatal("a call whose request cannot be written hangs")
		}
	}
	assertUsable(t, client)

	// Arguments too large for a frame (4 MiB by default): Send refuses
	// them whole, so the connection survives.
	big := make([]byte, transport.DefaultMaxFrameSize+1)
	var out []byte
	err := client.Call("Ledger.Bytes", big, &out)
	assert.ErrorIs(t, err, transport.ErrFrameTooLarge)
	assertUsable(t, client)
}

func TestNetRPCLargePayloads(t *testing.T) {
	client := pipeClient(t)

	const size = 1 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	text := strings.Repeat("zerodial ", size/9+1)[:size]

	for range 3 { // large buffers are dropped and regrown in turn
		var out Payload
		require.NoError(t, client.Call("Ledger.Mirror", Payload{Data: data, Text: text}, &out))
		assert.True(t, bytes.Equal(data, out.Data), "Data differs")
		assert.True(t, out.Text == text, "Text differs")

		var raw []byte
		require.NoError(t, client.Call("Ledger.Bytes", data, &raw))
		assert.True(t, bytes.Equal(data, raw), "raw bytes differ")

		// And small calls between the large ones.
		assertUsable(t, client)
	}
}

func TestNetRPCOverLoopbackTCP(t *testing.T) {
	csock, ssock, cconn := loopbackSockets(t)
	client, served := serveSuite(t, newSuiteServer(t, nil), csock, ssock)

	var total Total
	require.NoError(t, client.Call("Ledger.Product", Operands{17, 8}, &total))
	assert.Equal(t, 136, total.N)
	err := client.Call("Ledger.Quotient", Operands{1, 0}, &total)
	assert.Equal(t, rpc.ServerError(errDivisionByZero.Error()), err)

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			var total Total
			if assert.NoError(t, client.Call("Ledger.Sum", Operands{i, i}, &total)) {
				assert.Equal(t, 2*i, total.N)
			}
		})
	}
	wg.Wait()

	// The client stops sending with a call in flight: the server sees the
	// end of the requests, but still answers the call it has, and only
	// then closes.
	call := client.Go("Ledger.Nap", Operands{20, 1}, new(Total), nil)
	require.NoError(t, cconn.CloseWrite())
	c := wait(t, call)
	require.NoError(t, c.Error)
	assert.Equal(t, 21, c.Reply.(*Total).N)
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("ServeCodec did not return after the requests ended")
	}
}
