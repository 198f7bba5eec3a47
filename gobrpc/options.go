package gobrpc

// DefaultMaxMessage is the default limit on one gob message a peer may send:
// 4 MiB, the zerodial wire's default frame limit (transport.DefaultMaxFrameSize),
// so a service takes the same largest body whichever wire it arrives on. A
// request's or response's header and body are separate messages, each
// counted on its own, and so is each type definition gob sends before the
// first value of a type.
const DefaultMaxMessage = 4 << 20

// Option configures NewServerCodec and NewClientCodec.
type Option func(*options)

type options struct {
	maxMessage uint64
}

func applyOptions(opts []Option) options {
	o := options{maxMessage: DefaultMaxMessage}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithMaxMessage sets the largest gob message, in bytes, the peer may send:
// a larger one fails the read with a *MessageTooLargeError before any of its
// bytes are read, and the connection cannot be read further. It bounds what
// the codec reads, not what it writes. n <= 0 keeps DefaultMaxMessage.
func WithMaxMessage(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxMessage = uint64(n)
		}
	}
}
