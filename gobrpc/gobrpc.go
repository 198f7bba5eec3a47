package gobrpc

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"sync"
	"sync/atomic"
)

// NewServerCodec returns an rpc.ServerCodec that reads requests from conn and
// writes responses to it in net/rpc's gob encoding, the codec rpc.ServeConn
// uses: an rpc.Dial client can call a server that serves it. The codec owns
// conn: its Close closes conn.
func NewServerCodec(conn io.ReadWriteCloser, opts ...Option) rpc.ServerCodec {
	return &serverCodec{newStream(conn, true, opts)}
}

// NewClientCodec returns an rpc.ClientCodec that writes requests to conn and
// reads responses from it in net/rpc's gob encoding, the codec rpc.NewClient
// uses: rpc.NewClientWithCodec(NewClientCodec(conn)) can call rpc.ServeConn.
// The codec owns conn: its Close closes conn.
func NewClientCodec(conn io.ReadWriteCloser, opts ...Option) rpc.ClientCodec {
	return &clientCodec{newStream(conn, false, opts)}
}

// ServerCodecFunc returns NewServerCodec with opts as a function of the
// connection alone, the shape jsonrpc.NewServerCodec has and that APIs
// taking a codec constructor take (dispatch.Server.ServeConn):
// srv.ServeConn(conn, gobrpc.ServerCodecFunc()).
func ServerCodecFunc(opts ...Option) func(conn io.ReadWriteCloser) rpc.ServerCodec {
	return func(conn io.ReadWriteCloser) rpc.ServerCodec { return NewServerCodec(conn, opts...) }
}

// ClientCodecFunc returns NewClientCodec with opts as a function of the
// connection alone, the shape jsonrpc.NewClientCodec has and that APIs
// taking a codec constructor take (dispatch.DialCodec).
func ClientCodecFunc(opts ...Option) func(conn io.ReadWriteCloser) rpc.ClientCodec {
	return func(conn io.ReadWriteCloser) rpc.ClientCodec { return NewClientCodec(conn, opts...) }
}

type serverCodec struct{ s *stream }

func (c *serverCodec) ReadRequestHeader(r *rpc.Request) error { return c.s.read(r) }
func (c *serverCodec) ReadRequestBody(body any) error         { return c.s.read(body) }
func (c *serverCodec) WriteResponse(r *rpc.Response, body any) error {
	return c.s.write(r, body)
}
func (c *serverCodec) Close() error { return c.s.close() }

// LocalAddr is conn's local address when conn is a net.Conn, else nil:
// dispatch's Server.ServeCodec gives it, and RemoteAddr, to the CallInfo
// of the calls it serves (ServeConn takes them from the connection it is
// given, which it hands to the codec wrapped).
func (c *serverCodec) LocalAddr() net.Addr { return c.s.localAddr() }

// RemoteAddr is conn's remote address when conn is a net.Conn, else nil.
func (c *serverCodec) RemoteAddr() net.Addr { return c.s.remoteAddr() }

type clientCodec struct{ s *stream }

// LocalAddr is conn's local address when conn is a net.Conn, else nil.
func (c *clientCodec) LocalAddr() net.Addr { return c.s.localAddr() }

// RemoteAddr is conn's remote address when conn is a net.Conn, else nil:
// dispatch's NewCodecClient gives it to the CallInfo of its calls.
func (c *clientCodec) RemoteAddr() net.Addr { return c.s.remoteAddr() }

func (c *clientCodec) WriteRequest(r *rpc.Request, body any) error { return c.s.write(r, body) }
func (c *clientCodec) ReadResponseHeader(r *rpc.Response) error    { return c.s.read(r) }
func (c *clientCodec) ReadResponseBody(body any) error             { return c.s.read(body) }
func (c *clientCodec) Close() error                                { return c.s.close() }

var errClosed = fmt.Errorf("gobrpc: codec is closed: %w", net.ErrClosed)

// stream is one connection's pair of gob streams, the part both codecs share.
// net/rpc reads from one goroutine and writes from one at a time; Close may
// come from any.
type stream struct {
	conn io.ReadWriteCloser
	dec  *gob.Decoder
	enc  *gob.Encoder
	buf  *bufio.Writer
	// flushOnError: a server sends what it buffered of a response that
	// failed (its header) before it closes, as net/rpc's server codec does.
	flushOnError bool

	closed    atomic.Bool
	closeOnce sync.Once
}

func newStream(conn io.ReadWriteCloser, flushOnError bool, opts []Option) *stream {
	o := applyOptions(opts)
	buf := bufio.NewWriter(conn)
	return &stream{
		conn:         conn,
		dec:          gob.NewDecoder(newLimitReader(conn, o.maxMessage)),
		enc:          gob.NewEncoder(buf),
		buf:          buf,
		flushOnError: flushOnError,
	}
}

// localAddr and remoteAddr are conn's addresses when conn is a net.Conn,
// else nil.
func (s *stream) localAddr() net.Addr {
	if nc, ok := s.conn.(net.Conn); ok {
		return nc.LocalAddr()
	}
	return nil
}

func (s *stream) remoteAddr() net.Addr {
	if nc, ok := s.conn.(net.Conn); ok {
		return nc.RemoteAddr()
	}
	return nil
}

func (s *stream) read(v any) (err error) {
	if s.closed.Load() {
		return errClosed
	}
	// encoding/gob turns its own errors into returned ones, but a stream
	// crafted to confuse it can make it panic at a nil pointer while it
	// reads past a value (FuzzServerCodec found one, kept in testdata):
	// that is a malformed stream too, not a reason to crash the process.
	// The decoder's place in the stream is lost, so later reads fail.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gobrpc: malformed gob stream: %v", r)
			s.dec = gob.NewDecoder(failingReader{err})
		}
	}()
	return s.dec.Decode(v)
}

// failingReader is the reader of a stream that can no longer be read.
type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

// write sends a header and a body and flushes them. Any failure closes the
// connection: what is on the wire may end mid-message, and net/rpc's Server
// ignores the error, which would leave the caller waiting.
func (s *stream) write(header, body any) error {
	if s.closed.Load() {
		return errClosed
	}
	err := encode(s.enc, header)
	if err == nil {
		err = encode(s.enc, body)
	}
	if err == nil {
		if err = s.buf.Flush(); err == nil {
			return nil
		}
	} else if s.flushOnError {
		s.buf.Flush()
	}
	s.close()
	return err
}

// encode is enc.Encode, with an error for a nil pointer where gob panics.
func encode(enc *gob.Encoder, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return fmt.Errorf("gobrpc: cannot encode a nil pointer (%s)", rv.Type())
	}
	return enc.Encode(v)
}

// close closes the connection the first time and returns its error; later
// calls return nil, as net/rpc's server codec does.
func (s *stream) close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		err = s.conn.Close()
	})
	return err
}
