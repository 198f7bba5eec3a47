package dispatch_test

import (
	"errors"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/gobrpc"
)

// Legacy is a service of a server not moved to zerodial: a standard
// library rpc.Server serves it, with gob or JSON-RPC.
type Legacy struct {
	name    string
	entered chan struct{} // Block signals here when it starts
	release chan struct{} // closed to let every Block return
	once    sync.Once
}

func newLegacy(name string) *Legacy {
	return &Legacy{name: name, entered: make(chan struct{}, 64), release: make(chan struct{})}
}

// free lets every Block, now and later, return.
func (l *Legacy) free() { l.once.Do(func() { close(l.release) }) }

func (l *Legacy) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (l *Legacy) Fill(args Args, reply *Reply) error {
	*reply = Reply{X: args.A, S: "filled", List: []int{args.A, args.B}}
	return nil
}

func (l *Legacy) Fail(args Args, reply *int) error {
	*reply = 7 // net/rpc sends no reply with an error: the caller's stays zero
	return errors.New("legacy: refused")
}

// Who says which server answered.
func (l *Legacy) Who(args Args, reply *string) error {
	*reply = l.name
	return nil
}

// Block waits until free, then replies A.
func (l *Legacy) Block(args Args, reply *int) error {
	l.entered <- struct{}{}
	<-l.release
	*reply = args.A
	return nil
}

// legacyServer is a standard library rpc.Server of a Legacy on a loopback
// listener, each connection served by serve (rpc.Server.ServeConn, or
// ServeCodec with jsonrpc's codec). It stops when the test ends: Blocks
// freed, listener and connections closed, every goroutine returned.
type legacyServer struct {
	svc  *Legacy
	l    net.Listener
	addr string
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// netRPCKinds are the two encodings of the standard library: the server's
// way to serve a connection, and the client's codec.
var netRPCKinds = []struct {
	name     string
	serve    func(srv *rpc.Server, conn net.Conn)
	newCodec func(io.ReadWriteCloser) rpc.ClientCodec
}{
	{"gob", func(srv *rpc.Server, conn net.Conn) { srv.ServeConn(conn) },
		func(c io.ReadWriteCloser) rpc.ClientCodec { return gobrpc.NewClientCodec(c) }},
	{"jsonrpc", func(srv *rpc.Server, conn net.Conn) { srv.ServeCodec(jsonrpc.NewServerCodec(conn)) },
		jsonrpc.NewClientCodec},
}

func startLegacy(t testing.TB, name string, serve func(*rpc.Server, net.Conn)) *legacyServer {
	t.Helper()
	svc := newLegacy(name)
	srv := rpc.NewServer()
	require.NoError(t, srv.RegisterName("Legacy", svc))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &legacyServer{svc: svc, l: l, addr: l.Addr().String()}
	s.wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, conn)
			s.mu.Unlock()
			s.wg.Go(func() { serve(srv, conn) })
		}
	})
	t.Cleanup(s.stop)
	return s
}

// hangUp closes every connection the server has accepted.
func (s *legacyServer) hangUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// stop closes the listener and the connections, frees the Blocks and
// waits for every goroutine of the server.
func (s *legacyServer) stop() {
	s.l.Close()
	s.svc.free()
	s.hangUp()
	s.wg.Wait()
}

// recordingCodec is a client codec that reports each body it reads: the
// value given, nil when the body was discarded.
type recordingCodec struct {
	rpc.ClientCodec
	bodies chan any
}

func (c *recordingCodec) ReadResponseBody(body any) error {
	err := c.ClientCodec.ReadResponseBody(body)
	c.bodies <- body
	return err
}

// scriptedCodec is a client codec whose responses the test writes: each
// WriteRequest is sent on requests, and ReadResponseHeader returns what
// the test sends on responses (an error, or a header), until Close.
type scriptedCodec struct {
	requests  chan rpc.Request
	responses chan any
	closed    chan struct{}
	once      sync.Once
}

func newScriptedCodec() *scriptedCodec {
	return &scriptedCodec{requests: make(chan rpc.Request, 16), responses: make(chan any, 16), closed: make(chan struct{})}
}

func (c *scriptedCodec) WriteRequest(r *rpc.Request, _ any) error {
	select {
	case <-c.closed:
		return net.ErrClosed
	default:
	}
	c.requests <- *r
	return nil
}

func (c *scriptedCodec) ReadResponseHeader(r *rpc.Response) error {
	select {
	case v := <-c.responses:
		if err, ok := v.(error); ok {
			return err
		}
		*r = v.(rpc.Response)
		return nil
	case <-c.closed:
		return net.ErrClosed
	}
}

func (c *scriptedCodec) ReadResponseBody(any) error { return nil }

func (c *scriptedCodec) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
