package dispatchtest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The paths of httpzerodial's Client (httpzerodial.Dial): a
// dispatch.Client over HTTP, through connect-go's client, to a Server
// served by httpzerodial's Handler. Being a dispatch.Client, it names its
// own failures and bounds what it reads as every path does; what HTTP and
// the Handler cannot carry is what the Handler's paths declare, and the
// differences below.

// HTTPClientHeaderMetadata: request metadata are HTTP headers; the Client
// refuses a key that is not a token before sending anything.
var HTTPClientHeaderMetadata = &Difference{
	Name: "metadata are headers, checked by the Client",
	Doc:  "request metadata are HTTP headers, whose names are tokens: the Client refuses a key that is not one (ключ) with invalid_argument before anything is sent; the keys HTTP carries reach the handler with the deadline",
	Effects: map[string]Effect{
		"deadline and metadata reach the handler, nothing else does": {
			Doc: "the keys that are tokens reach the handler with the deadline; a key that is not one is refused by the Client",
			Run: headerMetadataRun,
			Check: func(t *testing.T, o Outcome) {
				assert.Equal(t, Outcome{Reply: "{HasDeadline:true DeadlineSane:true Metadata:map[trace:t-1 user:alice] SawForeign:false}",
					Extra: `httpzerodial: the metadata key "ключ" cannot be an HTTP header name (RFC 9110's token) (code invalid_argument)`}, o)
			},
		},
	},
}

// framePeerAnnounced is how zerodial's wire says a frame is over the limit;
// connect-go's client says it of a message.
var framePeerAnnounced = regexp.MustCompile(`peer announced \d+ bytes, limit (\d+)`)

// DialReadLimit: the Client reads at most its limit of a message, as
// every path does, in connect-go's words: the call fails as on zerodial's
// wire (transport.ErrFrameTooLarge, ErrShutdown), naming the message's
// size rather than the frame's. An error message over it fails so too:
// the Handler sends errors whole (HTTPErrorUnbounded), where a Server on
// zerodial's wire answers CodeInternal without the message.
var DialReadLimit = &Difference{
	Name: "the Client bounds messages in connect-go's words",
	Doc:  "a reply, message or error over the Client's limit fails as a frame over the limit does on zerodial's wire, in connect-go's words (message size N is larger than configured max L); the Handler sends an error whole, and the Client refuses it as such a reply",
	Effects: map[string]Effect{
		"reply over the client's frame limit": {Doc: "transport.ErrFrameTooLarge, in connect-go's words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Extra = framePeerAnnounced.ReplaceAllString(o.Extra, "message size 102400 is larger than configured max $1")
			return o
		}}},
		"a stream over a frame limit says why": {Doc: "a message over the Client's limit ends the stream with transport.ErrFrameTooLarge (the end of a gRPC stream, in trailers, is no message); the Handler refuses the caller's message over its limit (resource_exhausted, which Send sees as the stream's end), and its limit is of messages, not of the opening headers", Check: func(t *testing.T, o Outcome) {
			for line := range strings.Lines(o.Extra) {
				switch {
				case strings.HasPrefix(line, "caller's message over the server's limit: "):
					// Send sees the refusal as the stream's end, or the
					// refusal ends the stream first (gRPC).
					if !strings.Contains(line, "dispatch: the stream has ended") {
						assert.Contains(t, line, "is larger than the read limit of", line)
					}
				case strings.HasPrefix(line, "opening frame over the server's limit: "):
					assert.Contains(t, line, "ok", line)
				case strings.Contains(line, "end over the client's limit: ") && strings.Contains(line, ", ok"):
					// gRPC: the end is trailers, not a message.
				default:
					assert.Contains(t, line, "transport: frame too large: message size ", line)
					assert.Contains(t, line, "(frame too large: true, shut down: true)", line)
				}
			}
		}},
	},
}

// DialErrorBounded: over the Connect protocol an error is a message,
// which the Handler sends whole (HTTPErrorUnbounded) and the Client
// refuses over its limit, as a reply. (gRPC's error is in trailers,
// which no read limit bounds: it arrives whole, as HTTPErrorUnbounded
// says.)
var DialErrorBounded = &Difference{
	Name: "the Client bounds Connect's errors",
	Doc:  "a Connect error over the Client's limit, which the Handler sends whole, fails as a reply over it does (transport.ErrFrameTooLarge), where a Server on zerodial's wire answers CodeInternal without the message; the connection goes on",
	Effects: map[string]Effect{
		"error reply over the frame limit":          {Doc: "transport.ErrFrameTooLarge, then the next call succeeds", Check: wantFrameTooLarge},
		"error reply over the client's frame limit": {Doc: "transport.ErrFrameTooLarge, then the next call succeeds", Check: wantFrameTooLarge},
	},
}

// wantFrameTooLarge checks that every call of the case failed as a frame
// over the Client's limit.
func wantFrameTooLarge(t *testing.T, o Outcome) {
	assert.NotEmpty(t, o.Extra)
	for _, part := range strings.Split(o.Extra, "; ") {
		if then, ok := strings.CutPrefix(part, "then: "); ok {
			assert.Equal(t, "ok", then)
			continue
		}
		assert.Contains(t, part, "transport: frame too large: message size ", part)
	}
}

// HTTPClientServerOutlives: a Server's Close ends a stream in flight over
// HTTP with unavailable, as HTTPServerOutlives says of a call: the
// connection is the http.Server's.
var HTTPClientServerOutlives = &Difference{
	Name: "Close answers a stream over HTTP",
	Doc:  "a Server's Close ends a stream in flight with unavailable in its words: the connection is the http.Server's, which the Server cannot close",
	Effects: map[string]Effect{
		"a stream whose Server closes says why": {Doc: "unavailable, \"server closed while the call was in flight\"", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Extra = "dispatch: server closed while the call was in flight (frame too large: false, shut down: false)"
			return o
		}}},
	},
}

// DialH2HeaderLimits is HTTPHeaderLimits for the Client's unary calls over
// HTTP/2 (gRPC): request metadata over HTTP/2's advertised header list
// size is refused by the client, or by the server with a GOAWAY, which the
// Client reports as its connection's failure (ErrShutdown).
var DialH2HeaderLimits = &Difference{
	Name: "HTTP's header limits",
	Doc:  HTTPHeaderLimits.Doc + "; over HTTP/2 the server's GOAWAY is the Client's connection failing (ErrShutdown)",
	Effects: map[string]Effect{
		"request metadata of 1,100 entries": HTTPHeaderLimits.Effects["request metadata of 1,100 entries"],
		"request metadata over the frame limit": {Doc: "refused by HTTP/2, the handler never runs: the client's own refusal, or the server's GOAWAY or reset (ErrShutdown)", Check: func(t *testing.T, o Outcome) {
			assert.Empty(t, o.Interceptor, "the handler never runs")
			assert.Equal(t, 2, strings.Count(o.Extra, "), reply 0"), "both calls fail: %s", o.Extra)
			assert.NotContains(t, o.Extra, "ok, reply")
			assert.NotContains(t, o.Extra, "frame too large: true")
		}},
		"reply metadata of 1,100 entries":     HTTPHeaderLimits.Effects["reply metadata of 1,100 entries"],
		"reply metadata over the frame limit": HTTPHeaderLimits.Effects["reply metadata over the frame limit"],
	},
}

// HTTPClientConnectMsgpack is the Client's default: the Connect protocol
// in msgpack, unary calls over HTTP/1.1 and streams over h2c.
var HTTPClientConnectMsgpack = Profile{Name: "http-client-connect-msgpack", Differences: []*Difference{
	connectShapeWords("msgpack", true), HTTPFlowControl, HTTP2OpeningLimits, HTTPCodes, HTTPMethodPaths, HTTPReadLimit, HTTPHeaderLimits,
	DialReadLimit, DialErrorBounded, HTTPServerOutlives, HTTPClientServerOutlives, HTTPClientHeaderMetadata, HTTPNoPreface}}

// HTTPClientGRPCMsgpack is the Client WithGRPC, over h2c.
var HTTPClientGRPCMsgpack = Profile{Name: "http-client-grpc-msgpack", Differences: []*Difference{
	GRPCShapeUnsaid, GRPCStreamOfUnary, HTTPFlowControl, HTTP2OpeningLimits, HTTPCodes, HTTPMethodPaths, HTTPReadLimit, DialH2HeaderLimits,
	DialReadLimit, HTTPErrorUnbounded, HTTPServerOutlives, HTTPClientServerOutlives, HTTPClientHeaderMetadata, HTTPNoPreface}}

func init() {
	Profiles = append(Profiles, HTTPClientConnectMsgpack, HTTPClientGRPCMsgpack)
}
