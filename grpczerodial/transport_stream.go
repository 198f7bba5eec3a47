package grpczerodial

import (
	"errors"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
)

// transportStream is a unary handler's grpc.ServerTransportStream: the
// header and trailer it sets (grpc.SetHeader, grpc.SendHeader,
// grpc.SetTrailer), which go back with the reply as its metadata. A unary
// reply is one message, so a header "sent" early arrives with it, as it
// would with grpc-go over a network whose reply came at once.
type transportStream struct {
	method string

	mu      sync.Mutex
	header  metadata.MD
	trailer metadata.MD
	sent    bool // SendHeader was called: SetHeader fails from now on
	sealed  bool // the handler returned
}

func (t *transportStream) Method() string { return t.method }

var errHeaderSent = status.Error(codes.Internal, "grpczerodial: SetHeader called after the header was sent")

// errSealed is what the header and trailer functions return once the
// handler has returned, as grpc-go's do once its stream is done.
var errSealed = errors.New("grpczerodial: the call has ended; its header and trailer are gone")

func (t *transportStream) SetHeader(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.sealed:
		return errSealed
	case t.sent:
		return errHeaderSent
	}
	t.header = metadata.Join(t.header, md)
	return nil
}

func (t *transportStream) SendHeader(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.sealed:
		return errSealed
	case t.sent:
		return errHeaderSent
	}
	t.header = metadata.Join(t.header, md)
	t.sent = true
	return nil
}

func (t *transportStream) SetTrailer(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return errSealed
	}
	t.trailer = metadata.Join(t.trailer, md)
	return nil
}

// seal ends the setting of header and trailer and returns them as the
// reply's metadata.
func (t *transportStream) seal() dispatch.Metadata {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sealed = true
	return replyMD(t.header, t.trailer)
}
