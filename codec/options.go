package codec

// Option configures NewClientCodec and NewServerCodec.
type Option func(*options)

type options struct {
	codec Codec
}

func applyOptions(opts []Option) options {
	o := options{codec: Default}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithCodec selects the codec for request and response bodies. Both ends
// must choose the same one: the server answers a request whose Content-Type
// names another codec with an error. A nil c keeps Default.
func WithCodec(c Codec) Option {
	return func(o *options) {
		if c != nil {
			o.codec = c
		}
	}
}
