package gobrpc_test

import (
	"net"
	"testing"

	"github.com/zerodial/transport/gobrpc"
)

// addresser is what dispatch asks of a codec for a call's CallInfo.
type addresser interface {
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// TestCodecAddrs: both codecs report their net.Conn's addresses, and nil
// over a connection that is no net.Conn.
func TestCodecAddrs(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for name, codec := range map[string]any{"client": gobrpc.NewClientCodec(a), "server": gobrpc.NewServerCodec(b)} {
		ad, ok := codec.(addresser)
		if !ok {
			t.Fatalf("%s codec has no LocalAddr and RemoteAddr", name)
		}
		if ad.LocalAddr() == nil || ad.RemoteAddr() == nil || ad.LocalAddr().Network() != "pipe" {
			t.Errorf("%s codec over a net.Pipe: LocalAddr %v, RemoteAddr %v", name, ad.LocalAddr(), ad.RemoteAddr())
		}
	}
	var notConn struct{ rwc }
	for name, codec := range map[string]any{"client": gobrpc.NewClientCodec(notConn), "server": gobrpc.NewServerCodec(notConn)} {
		if ad := codec.(addresser); ad.LocalAddr() != nil || ad.RemoteAddr() != nil {
			t.Errorf("%s codec over no net.Conn: LocalAddr %v, RemoteAddr %v, want nil", name, ad.LocalAddr(), ad.RemoteAddr())
		}
	}
}

// rwc is an io.ReadWriteCloser that is no net.Conn.
type rwc struct{}

func (rwc) Read([]byte) (int, error)  { return 0, net.ErrClosed }
func (rwc) Write([]byte) (int, error) { return 0, net.ErrClosed }
func (rwc) Close() error              { return nil }
