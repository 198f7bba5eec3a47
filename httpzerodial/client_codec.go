package httpzerodial

import (
	"encoding/json"
	"fmt"

	"github.com/zerodial/transport/codec"
)

// JSON is encoding/json as a codec.Codec: the codec of a Client made
// WithJSON, in which its stream messages are decoded.
var JSON codec.Codec = jsonCodec{}

type jsonCodec struct{}

func (jsonCodec) Name() string                       { return codecJSON }
func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// outgoing is a request or a stream message of a Client as connect-go
// carries it: the caller's value, encoded by sendCodec.
type outgoing struct {
	v       any
	raw     []byte // encoded already: a stream's message kept for its request
	encoded bool
}

// incoming is a reply or a stream message of a Client as connect-go
// carries it: its bytes, copied out of connect-go's buffer (which it
// reuses once Unmarshal returns) into data, which a stream reuses for its
// next message.
type incoming struct{ data []byte }

// sendCodec is the connect.Codec of a Client: it encodes the caller's
// values with c and copies what comes back, which the Client decodes into
// the caller's types itself (connect-go allocates the value it decodes
// into, where the caller has one already).
type sendCodec struct{ c codec.Codec }

func (s sendCodec) Name() string { return s.c.Name() }

func (s sendCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*outgoing)
	if !ok {
		return nil, fmt.Errorf("httpzerodial: cannot marshal %T", v)
	}
	if m.encoded {
		return m.raw, nil // its own: connect-go may pool it
	}
	if a, ok := s.c.(codec.Appender); ok {
		return a.AppendMarshal(nil, m.v) // bytes of its own: connect-go pools them
	}
	return s.c.Marshal(m.v)
}

func (s sendCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*incoming)
	if !ok {
		return fmt.Errorf("httpzerodial: cannot unmarshal into %T", v)
	}
	m.data = append(m.data[:0], data...)
	return nil
}
