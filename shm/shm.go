package shm

import (
	"fmt"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/dialled"
	"github.com/zerodial/transport/internal/options"
)

// Transport is a shared-memory transport.Transport. The zero value is not
// usable; call New.
type Transport struct {
	opts settings
	err  error // the options' problems, or the system's lack: returned by Dial and Listen

	dialled dialled.Set // the open sockets Dial made: Close closes them
}

var (
	_ transport.Transport    = (*Transport)(nil)
	_ transport.FrameLimiter = (*Transport)(nil)
	_ transport.WireReporter = (*Transport)(nil)
)

// wire is what every shm Transport and listener speaks. Two ends in one
// process agree as two over the unix socket would, so dispatch's
// in-process shortcut may serve a Client of this process as it does over
// tcp.
var wire = transport.Wire{Protocol: "shm/1"}

// New returns a shared-memory Transport configured by opts
// (WithMaxFrameSize, WithRingSize, WithHandshakeTimeout, WithLogger),
// applied in order. New does not fail: if an option is invalid, every
// Dial and Listen of the Transport returns an error naming each invalid
// option and its value (errors.Join); on a system other than Linux they
// say that shared memory needs Linux.
func New(opts ...Option) *Transport {
	s := settings{Common: options.New("shm"), ringSize: defaultRingSize}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	err := s.Err()
	if err == nil {
		err = unsupported
	}
	return &Transport{opts: s, err: err}
}

// String returns "shm".
func (t *Transport) String() string { return "shm" }

// MaxFrameSize returns the largest message this transport carries.
func (t *Transport) MaxFrameSize() int { return t.opts.MaxFrameSize }

// Wire reports the shm protocol (transport.WireReporter).
func (t *Transport) Wire() transport.Wire { return wire }

// Close closes every socket this Transport dialled that is still open:
// their Send and Recv fail with transport.ErrClosed, their peers see the
// connection end, and their shared memory is unmapped. Dial fails with
// transport.ErrClosed afterwards. Listeners, and the sockets they
// accepted, serve on until closed on their own. Close is idempotent.
func (t *Transport) Close() error {
	t.dialled.Close()
	return nil
}

func dialClosed(addr string) error {
	return fmt.Errorf("shm: dial %s: %w", addr, transport.ErrClosed)
}
