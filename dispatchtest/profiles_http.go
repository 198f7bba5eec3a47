package dispatchtest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/dispatch"
)

// The paths of httpzerodial: a Server served over HTTP by its Handler,
// called by connect-go's own client (connectrpc.com/connect) in the
// protocol, codec and HTTP version each names. httpzerodial's
// TestConformance binds them; what they cannot carry is declared here.

// HTTPCodes: Connect and gRPC have a fixed set of codes, dispatch's named
// ones; a code of a handler's own goes as unknown (httpzerodial's
// ConnectCode).
var HTTPCodes = &Difference{
	Name: "codes of Connect and gRPC",
	Doc:  "the protocols carry their own fixed codes, which are dispatch's named ones: a code of a handler's own arrives as CodeUnknown, with its message",
	Effects: map[string]Effect{
		"handler error with code": {Doc: "CodeUnknown, the same message", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Code = dispatch.CodeUnknown
			return o
		}}},
	},
}

// HTTPMethodPaths: over HTTP a method is named by its URL path,
// "/Service/Method"; a name with no dot is a path of one segment, which
// names no method.
var HTTPMethodPaths = &Difference{
	Name: "methods are URL paths",
	Doc:  "a method is named by the URL path /Service/Method: a name without a dot is a path of one segment, which the Handler answers as a path that names no method",
	Effects: map[string]Effect{
		"ill-formed name": {Doc: `CodeNotFound, in httpzerodial's words: "/ArithMultiply" is not a method's path`, Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Code = dispatch.CodeNotFound
			o.Err = `httpzerodial: "/ArithMultiply" is not a method's path, /Service/Method`
			return o
		}}},
	},
}

// ConnectGoWords: the caller's own failures — the end of its context — are
// connect-go's, in its words, which do not name the call and its path as
// a dispatch.Client's do; their codes are the same.
var ConnectGoWords = &Difference{
	Name: "the caller's words are connect-go's",
	Doc:  "the caller's own failures (the end of its context) are connect-go's: the same code, matching context.DeadlineExceeded or Canceled, in words that do not name the call and its path (\"context deadline exceeded\")",
	Effects: effects([]string{
		"deadline exceeded",
		"deadline, handler blind to its context",
		"cancel, handler blind to its context",
		"caller reuses args and reply after an early return",
		"deadline already passed",
		"cancellation reaches the handler",
		"cancel mid-stream",
		"deadline mid-stream",
	}, Effect{Doc: "the same code, in connect-go's words", Want: []func(Outcome) Outcome{unnamed}}),
}

// HTTPReadLimit: connect-go's client sends a message of any size; the
// Handler refuses one over its read limit, unread, with
// resource_exhausted.
var HTTPReadLimit = &Difference{
	Name: "the server bounds the request",
	Doc:  "connect-go's client sends a message of any size; the Handler refuses one larger than its read limit (the frame limit) with resource_exhausted, unread, and the handler never runs",
	Effects: map[string]Effect{
		"oversize args": {Doc: "refused by the Handler: resource_exhausted, the handler never runs", Check: func(t *testing.T, o Outcome) {
			assert.Equal(t, dispatch.CodeResourceExhausted, o.Code)
			assert.Regexp(t, `^httpzerodial: (the message's Content-Length|a message of \d+ bytes \(its envelope says\)).* is larger than the read limit of 4194304 bytes$`, o.Err)
			assert.Equal(t, "0", o.Reply)
			assert.Empty(t, o.Interceptor, "the handler never runs")
		}},
		"request over the server's frame limit": {Doc: "refused by the Handler: resource_exhausted, the connection goes on, the handler never runs", Check: func(t *testing.T, o Outcome) {
			assert.Regexp(t, `^httpzerodial: (the message's Content-Length, \d+ bytes,|a message of \d+ bytes \(its envelope says\)) is larger than the read limit of 65536 bytes \(frame too large: false, shut down: false\), handler ran: false$`, o.Extra)
			assert.Empty(t, o.Interceptor, "the handler never runs")
		}},
	},
}

// HTTPClientReadLimit: connect-go's client bounds the messages it reads
// (connect.WithReadMaxBytes): a larger one fails the call with
// resource_exhausted, in its words, and the connection goes on.
var HTTPClientReadLimit = &Difference{
	Name: "connect-go bounds the reply",
	Doc:  "connect-go's client bounds the messages it reads (connect.WithReadMaxBytes): a reply over its limit fails the call with resource_exhausted, in its words, and the connection goes on",
	Effects: map[string]Effect{
		"reply over the client's frame limit": {Doc: "resource_exhausted, connect-go's words", Check: func(t *testing.T, o Outcome) {
			assert.Regexp(t, `^message size \d+ is larger than configured max 65536 \(frame too large: false, shut down: false\), reply of 0$`, o.Extra)
		}},
	},
}

// HTTPHeaderLimits: metadata are headers, bounded by HTTP's own limits —
// the http.Server's MaxHeaderBytes (1 MiB by default, 431 beyond it) and
// HTTP/2's advertised header list size for a request; net/http's client's
// MaxResponseHeaderBytes (10 MiB) for a reply — not by the wire's 1,024
// entries and frame limit.
var HTTPHeaderLimits = &Difference{
	Name: "HTTP's header limits",
	Doc:  "metadata are headers, bounded by HTTP's limits (the http.Server's MaxHeaderBytes, 1 MiB by default, and HTTP/2's advertised header list size for a request; net/http's MaxResponseHeaderBytes, 10 MiB, for a reply), not by the wire's 1,024 entries and frame limit: 1,100 entries cross both ways, 5 MiB of request metadata is refused by HTTP before the handler, 5 MiB of reply metadata crosses",
	Effects: map[string]Effect{
		"request metadata of 1,100 entries": {Doc: "the call is made, the handler sees them", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Interceptor = []string{"the handler ran"}
			o.Extra = "ok, reply 6; ok, reply 1"
			return o
		}}},
		"request metadata over the frame limit": {Doc: "refused by HTTP, the handler never runs: 431 over HTTP/1.1; over HTTP/2 the client's own refusal, or, when the headers left before the server's settings arrived, the server's GOAWAY or reset", Check: func(t *testing.T, o Outcome) {
			assert.Empty(t, o.Interceptor, "the handler never runs")
			assert.Equal(t, 2, strings.Count(o.Extra, " (frame too large: false, shut down: false), reply 0"), "both calls fail: %s", o.Extra)
			assert.NotContains(t, o.Extra, "ok, reply")
			// The status's words, not its number alone: a port in a
			// connection error ("127.0.0.1:43164") holds "431" too.
			if strings.Contains(o.Extra, "431 Request Header Fields Too Large") {
				assert.Regexp(t, `^(HTTP status )?431 Request Header Fields Too Large \(frame too large: false, shut down: false\), reply 0; (HTTP status )?431 Request Header Fields Too Large \(frame too large: false, shut down: false\), reply 0$`, o.Extra)
			}
		}},
		"reply metadata of 1,100 entries":     {Doc: "the reply and its 1,100 entries arrive", Want: []func(Outcome) Outcome{replyMetadataCrosses(1100)}},
		"reply metadata over the frame limit": {Doc: "the reply and its 5 MiB entry arrive", Want: []func(Outcome) Outcome{replyMetadataCrosses(1)}},
	},
}

// HTTP2OpeningLimits: HTTPHeaderLimits, for the metadata that opens a
// stream over HTTP/2.
var HTTP2OpeningLimits = &Difference{
	Name: "HTTP/2's header limits",
	Doc:  "a stream's opening metadata are headers, bounded by HTTP's limits, not by the wire's 1,024 entries and frame limit: 1,100 entries open the stream, 5 MiB is refused by HTTP",
	Effects: map[string]Effect{
		"opening metadata of 1,100 entries": {Doc: "the streams open, the handler sees them", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Extra = "CallStream: 0…2, ok; OpenStream: ok; CallStream: 0…2, ok; OpenStream: ok"
			return o
		}}},
		"opening metadata over the frame limit": {Doc: "CallStream refused by HTTP before any message (431, or the HTTP/2 client's refusal, GOAWAY or reset); OpenStream, whose headers go without waiting, refused then or at the stream's first Recv", Check: func(t *testing.T, o Outcome) {
			assert.Equal(t, 2, strings.Count(o.Extra, "CallStream: none, "), "CallStream refused, no message: %s", o.Extra)
			assert.NotContains(t, o.Extra, ", ok; OpenStream")
			assert.Equal(t, 2, strings.Count(o.Extra, "OpenStream: "), o.Extra)
		}},
	},
}

// HTTP2StreamEnds: over HTTP/2 a stream ends as HTTP's limits and
// connect-go say: the dispatch.Server's Close answers a stream in flight
// (the http.Server lives on); a message over the Handler's read limit is
// refused with resource_exhausted, or, when the caller is still sending,
// its Send sees the end (io.EOF, the suite's ErrStreamDone); opening
// metadata is bounded by HTTP's header limits, not the frame limit; a
// message over connect-go's client's read limit fails the stream
// (resource_exhausted); a stream's end over it fails it too over Connect,
// whose end is a message, and arrives over gRPC, whose end is trailers.
var HTTP2StreamEnds = &Difference{
	Name: "HTTP/2's stream ends",
	Doc:  "a stream ends as HTTP and connect-go say: the dispatch.Server's Close answers it (the http.Server lives on); a message over the Handler's read limit is refused (resource_exhausted), or the caller's Send sees the end first; opening metadata is bounded by HTTP's header limits; connect-go's client refuses a message over its read limit, and a stream's end over it over Connect (a message), not over gRPC (trailers)",
	Effects: map[string]Effect{
		"a stream whose Server closes says why": {Doc: "answered: \"dispatch: server closed while the call was in flight\"", Want: []func(Outcome) Outcome{
			withExtra("dispatch: server closed while the call was in flight (frame too large: false, shut down: false)")}},
		"a stream over a frame limit says why": {Doc: "refused by the Handler's and connect-go's read limits, in their words; the opening metadata and a gRPC stream's end cross", Check: func(t *testing.T, o Outcome) {
			const ok = ` \(frame too large: false, shut down: false\)`
			lines := strings.Split(o.Extra, "\n")
			i := 0
			for ; i < len(lines) && strings.HasPrefix(lines[i], "caller's message over the server's limit"); i++ {
				assert.Regexp(t, `^caller's message over the server's limit(, try \d+)?: (0 messages, httpzerodial: a message of \d+ bytes \(its envelope says\) is larger than the read limit of 65536 bytes|Send refused: dispatch: the stream has ended)`+ok+`$`, lines[i])
			}
			if assert.Less(t, i, len(lines)) {
				assert.Equal(t, "opening frame over the server's limit: 1 messages, ok", lines[i])
			}
			rest := lines[min(i+1, len(lines)):]
			if assert.Len(t, rest, 6) {
				for j, shape := range []string{"CallStream", "CallStream, ctx can end", "OpenStream"} {
					assert.Regexp(t, "^"+shape+`, handler's message over the client's limit: 0 messages, message size \d+ is larger than configured max 65536`+ok+`$`, rest[2*j])
					assert.Regexp(t, "^"+shape+`, end over the client's limit: 0 messages, (ok|message size \d+ is larger than configured max 65536`+ok+`)$`, rest[2*j+1])
				}
			}
		}},
	},
}

// replyMetadataCrosses is what replyMetadataRefused records when reply
// metadata of n entries crosses whole: the replies (1, 0), the handler's
// error, each with the metadata of its call, for both methods and both
// contexts.
func replyMetadataCrosses(n int) func(Outcome) Outcome {
	return func(o Outcome) Outcome {
		one := []string{
			fmt.Sprintf("ok (code <not *dispatch.Error>), reply 1, metadata %d", n),
			"ok (code <not *dispatch.Error>), reply 0, metadata 1",
			fmt.Sprintf("failed, with metadata (frame too large: false, shut down: false) (code ), reply 0, metadata %d", n),
		}
		var all []string
		for range 4 {
			all = append(all, one...)
		}
		o.Extra = strings.Join(all, "; ")
		return o
	}
}

// HTTPErrorUnbounded: the Handler sends a handler's error as it is, its
// message however long — in a Connect error body, or gRPC's grpc-message
// trailer — where zerodial's wire refuses an error reply over the frame
// limit (internal, "reply ... is too large"); a gRPC client reads the
// trailer whatever its read limit, a Connect client bounds the body.
var HTTPErrorUnbounded = &Difference{
	Name: "errors sent whole",
	Doc:  "the Handler sends a handler's error message whole, however long, in a Connect error body or gRPC's grpc-message trailer, where the wire answers an error over the frame limit with internal; connect-go's client bounds a Connect error body by its read limit (resource_exhausted), not gRPC's trailers",
	Effects: map[string]Effect{
		"error reply over the frame limit": {Doc: "the 5 MiB message arrives whole", Check: wantErrorsWhole(5<<20, false)},
		"error reply over the client's frame limit": {Doc: "over Connect, the client refuses the body (resource_exhausted); over gRPC and gRPC-Web, the message arrives whole",
			Check: wantErrorsWhole(64<<10+100, true)},
	},
}

// wantErrorsWhole asserts what errorReplyTooLarge records when each error
// message of n bytes arrives whole, or, bounded, is refused by connect-go's
// client over the Connect protocol.
func wantErrorsWhole(n int, bounded bool) func(t *testing.T, o Outcome) {
	return func(t *testing.T, o Outcome) {
		parts := strings.Split(o.Extra, "; ")
		if !assert.Len(t, parts, 5) {
			return
		}
		whole := strings.Repeat("e", n) + " (frame too large: false, shut down: false) (code )"
		for _, p := range parts[:4] {
			if bounded && strings.HasPrefix(p, "message size") {
				assert.Regexp(t, `^message size \d+ is larger than configured max 65536 \(frame too large: false, shut down: false\) \(code resource_exhausted\)$`, p)
				continue
			}
			assert.True(t, p == whole, "an error message of %d bytes, whole: got %d bytes: %.80s…", n, len(p), p)
		}
		assert.Equal(t, "then: ok", parts[4])
	}
}

// HTTPServerOutlives: the dispatch.Server's Close ends the calls in flight,
// but not the http.Server that carries them: the Handler answers such a
// call with the Server's words, where zerodial's wire loses its
// connection.
var HTTPServerOutlives = &Difference{
	Name: "Close answers over HTTP",
	Doc:  "the dispatch.Server's Close does not close the http.Server that carries its calls: a call in flight is answered with the Server's words (\"dispatch: server closed while the call was in flight\"), where the wire's connection is lost",
	Effects: map[string]Effect{
		"the server closed mid-call": {Doc: "answered: \"dispatch: server closed while the call was in flight\"", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Extra = "dispatch: server closed while the call was in flight (frame too large: false, shut down: false)"
			return o
		}}},
	},
}

// JSONBase64: JSON carries bytes in base64, a third larger than they are:
// a body near the frame limit in msgpack is over it in JSON, and refused
// as any message over the Handler's read limit is.
var JSONBase64 = &Difference{
	Name: "JSON's bytes are base64",
	Doc:  "JSON carries []byte as base64, a third larger: a body just under the frame limit in msgpack is over it in JSON, and the Handler refuses it with resource_exhausted",
	Effects: map[string]Effect{
		"body near the frame limit": {Doc: "resource_exhausted: its base64 is over the read limit", Check: func(t *testing.T, o Outcome) {
			assert.Equal(t, dispatch.CodeResourceExhausted, o.Code)
			assert.Regexp(t, `is larger than the read limit of 4194304 bytes$`, o.Err)
			assert.Empty(t, o.Interceptor, "the handler never runs")
		}},
	},
}

// JSONWords: a JSON path's arguments are decoded by encoding/json, which
// says why in its words.
var JSONWords = &Difference{
	Name: "encoding/json's words",
	Doc:  "arguments in JSON are decoded by encoding/json: a refusal has the same code, in its words",
	Effects: map[string]Effect{
		"wrong args type": {Doc: "invalid_argument, encoding/json's words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err = "dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal string into Go value of type dispatchtest.Args"
			return o
		}}},
		"arguments of another type": {Doc: "invalid_argument, in the JSON object's words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err = `dispatch: decoding arguments of Arith.Multiply: codec: no fields matched: the object's keys ["X" "S" "List"] name no field of type dispatchtest.Args`
			return o
		}}},
		"a field of another type": {Doc: "invalid_argument, encoding/json's words, which name the field", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err = "dispatch: decoding arguments of Arith.Multiply: json: cannot unmarshal string into Go struct field Args.A of type int"
			return o
		}}},
		"a misspelled field refused by a strict Server": {Doc: "invalid_argument, encoding/json's words (json.Decoder.DisallowUnknownFields)", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err = `dispatch: decoding arguments of Arith.Multiply: json: unknown field "Bb"`
			return o
		}}},
		"a reply of another type": {Doc: "the caller decodes the reply with encoding/json, in its words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err = "dispatch: decoding reply of Arith.Fill: json: cannot unmarshal object into Go value of type int64"
			return o
		}}},
	},
}

// HeaderMetadata: metadata travel as HTTP headers, whose names are
// tokens (RFC 9110): a key that is not one — "ключ" — cannot be sent, and
// net/http's client refuses the request. The case runs with the keys HTTP
// carries, and shows that refusal.
var HeaderMetadata = &Difference{
	Name: "metadata are headers",
	Doc:  "request metadata are HTTP headers, whose names are tokens: a key that is not one (ключ) cannot be sent, and net/http's client refuses the request (unavailable); the keys HTTP carries reach the handler with the deadline",
	Effects: map[string]Effect{
		"deadline and metadata reach the handler, nothing else does": {
			Doc: "the keys that are tokens reach the handler with the deadline; a key that is not one is refused by net/http's client",
			Run: headerMetadataRun,
			Check: func(t *testing.T, o Outcome) {
				assert.Equal(t, Outcome{Reply: "{HasDeadline:true DeadlineSane:true Metadata:map[trace:t-1 user:alice] SawForeign:false}",
					Extra: `net/http: invalid header field name "ключ" (code unavailable)`}, o)
			},
		},
	},
}

// HTTPDeadlineReset: connect-go's client, whose deadline passes, goes
// away — its HTTP/2 stream reset, its HTTP/1.1 connection closed — and
// nothing says why: the handler's context ends with the request's,
// canceled, when that arrives before the server's own deadline
// (Connect-Timeout-Ms, grpc-timeout, which counts from the request's
// arrival) passes. httpzerodial's Client does not: its request outlives
// the caller's deadline until the server's answer.
var HTTPDeadlineReset = &Difference{
	Name: "a reset says no why",
	Doc:  "connect-go's client, whose deadline passed, goes away (an HTTP/2 reset, an HTTP/1.1 connection closed) without saying why: the handler's context may end canceled, when that arrives before the server's own deadline, which counts from the request's arrival, passes",
	Effects: map[string]Effect{
		"deadline mid-stream": {Doc: "the handler's context ends at the deadline, or canceled when the client's reset comes first", Want: []func(Outcome) Outcome{
			func(o Outcome) Outcome { return o },
			func(o Outcome) Outcome {
				o.Handler = strings.ReplaceAll(o.Handler, "context deadline exceeded", "context canceled")
				return o
			},
		}},
		"deadline exceeded": {Doc: "the handler's context ends at the deadline, or canceled when the client's reset comes first", Want: []func(Outcome) Outcome{
			func(o Outcome) Outcome { return o },
			func(o Outcome) Outcome {
				o.Interceptor = slices.Clone(o.Interceptor)
				for i, s := range o.Interceptor {
					o.Interceptor[i] = strings.ReplaceAll(s, "err=context deadline exceeded", "err=context canceled")
				}
				return o
			},
		}},
	},
}

// HTTPNoPreface: HTTP has no preface of zerodial's: connect-go's client
// finds a listener of zerodial's wire out at its first call, which fails,
// not with transport.ErrProtocol.
var HTTPNoPreface = &Difference{
	Name: "no preface",
	Doc:  "HTTP has no preface of zerodial's: a call to a listener of zerodial's wire fails with connect-go's error, not transport.ErrProtocol",
	Effects: map[string]Effect{
		"a listener of another protocol": {Doc: "the call fails, without transport.ErrProtocol (connect-go's code says how the connection ended)", Check: func(t *testing.T, o Outcome) {
			assert.Equal(t, "dial failed: true, protocol error: false", o.Extra)
			assert.Empty(t, o.Interceptor)
		}},
	},
}

// HTTPFlowControl: a stream's flow control is HTTP/2's (its windows) and
// the socket's buffers, not dispatch's window (DefaultStreamWindow): a
// handler whose caller does not read stalls, later than on the other paths.
var HTTPFlowControl = &Difference{
	Name: "HTTP/2's flow control",
	Doc:  "a stream's flow control is HTTP/2's windows and the socket's buffers, not dispatch's window: a handler whose caller does not read stalls all the same, after more messages than DefaultStreamWindow holds",
	Effects: map[string]Effect{
		"slow consumer": {Doc: "the handler stalls, after more than dispatch's window", Check: func(t *testing.T, o Outcome) {
			assert.Equal(t, "context canceled", o.Handler, "the handler stalled in Send until the caller closed")
			assert.Contains(t, []string{"true", "false"}, o.Extra)
		}},
	},
}

// connectShapeWords: the Connect protocol says a request's shape, and the
// Handler refuses the other one with the shape rule's code, in words that
// say how to make the call over HTTP (with the codec's Content-Type);
// streams says whether the path opens streams both ways (HTTP/2).
func connectShapeWords(codec string, streams bool) *Difference {
	d := &Difference{
		Name: "shape refused in HTTP's words, " + codec,
		Doc:  "a call of the other shape than its method's is refused with the shape rule's code, invalid_argument, in words that say how to make it over HTTP: dispatch's speak of its Go API (OpenStream, Call), which a caller over HTTP does not have",
		Effects: map[string]Effect{
			"a stream opened on a unary method": {Doc: "invalid_argument, in HTTP's words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Err = "httpzerodial: S.Unary is not a streaming method; POST its arguments as they are, Content-Type application/" + codec
				return o
			}}},
			"a unary call of a streaming method": {Doc: "invalid_argument, in HTTP's words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
				o.Err = "httpzerodial: S.Count is a streaming method; POST its message as a Connect stream, Content-Type application/connect+" + codec +
					", the message after a 5-byte prefix: a zero byte, then its length in 4 bytes, big-endian (as `zerodial stream` does)"
				return o
			}}},
		},
	}
	if !streams {
		// Over HTTP/1.1 no stream is opened both ways: HTTP1HalfDuplex.
		delete(d.Effects, "a stream opened on a unary method")
	}
	return d
}

// GRPCShapeUnsaid: a gRPC or gRPC-Web request does not say its shape
// (every gRPC call is a stream on the wire): a unary call of a streaming
// method whose handler sends one message is answered with it.
var GRPCShapeUnsaid = &Difference{
	Name: "gRPC says no shape",
	Doc:  "a gRPC request does not say its shape: a unary call of a streaming method whose handler sends one message gets it as the reply (connect-go refuses none, or more than one)",
	Effects: map[string]Effect{
		"a unary call of a streaming method": {Doc: "the call is the stream: its one message is the reply", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err, o.Code = "", ""
			return o
		}}},
	},
}

// GRPCStreamOfUnary: a gRPC stream of a unary method is its call: it is
// answered once its one message and its end have come.
var GRPCStreamOfUnary = &Difference{
	Name: "a gRPC stream is a call",
	Doc:  "a gRPC request does not say its shape: a stream of a unary method is answered, as the call, once its one message and its end have come",
	Effects: map[string]Effect{
		"a stream opened on a unary method": {
			Doc: "the stream is the call: its one message, its end, then the reply",
			Run: func(t *testing.T, c Caller) Outcome {
				s, err := c.OpenStream(context.Background(), stream[Num, Num]("S.Unary"))
				if err != nil {
					return streamOutcome("", err)
				}
				defer s.Close()
				_ = s.Send(&Num{1})
				_ = s.CloseSend()
				got, err := recvAll[Num](s)
				return streamOutcome(fmt.Sprint(got), err)
			},
			Check: want(Outcome{Reply: "[{1}]"}),
		},
	},
}

// http1Refusal matches connect-go's client's refusal of a bidirectional
// stream over HTTP/1.1.
var http1Refusal = `response from http://\S+ is HTTP/1\.1: bidi streams require at least HTTP/2`

// HTTP1HalfDuplex: HTTP/1.1 carries one direction at a time: the Handler
// serves a stream over it as a server stream (one message from the caller,
// any number back), which CallStream is; connect-go's client refuses a
// bidirectional stream (OpenStream) over it, unimplemented. Each case that
// opens one shows that refusal.
var HTTP1HalfDuplex = &Difference{
	Name: "HTTP/1.1: server streams",
	Doc:  "HTTP/1.1 carries one direction at a time: CallStream (one message, any number back) is served, and connect-go's client refuses a stream opened both ways (OpenStream) over it, unimplemented",
	Effects: func() map[string]Effect {
		refused := Effect{
			Doc: "OpenStream is refused by connect-go's client: unimplemented",
			Run: func(t *testing.T, c Caller) Outcome {
				s, err := c.OpenStream(context.Background(), stream[Num, Num]("S.Echo"))
				if s != nil {
					s.Close()
				}
				return streamOutcome("", err)
			},
			Check: func(t *testing.T, o Outcome) {
				assert.Equal(t, dispatch.CodeUnimplemented, o.Code)
				assert.Regexp(t, "^"+http1Refusal+"$", o.Err)
			},
		}
		m := effects([]string{
			"client to server, 1000", "echo, 1000", "echo in lock-step", "empty both ways", "Close mid-stream",
			"the handler's Send when the caller goes", "handler returns while the caller sends", "slow consumer",
			"metadata both ways", "messages near the frame limit", "a stream opened on a unary method",
			"a stream whose Server closes says why", "a stream over a frame limit says why",
		}, refused)
		opening := func(md dispatch.Metadata, callStream, openStream string) Effect {
			return Effect{
				Doc: "CallStream as HTTP's header limits say, OpenStream refused by connect-go's client",
				Run: func(t *testing.T, c Caller) Outcome { return streamMetadataRefused(md)(t, &env{caller: c}) },
				Check: func(t *testing.T, o Outcome) {
					assert.Regexp(t, "^"+callStream+"; OpenStream: "+openStream+` \(frame too large: false, shut down: false\); `+
						callStream+"; OpenStream: "+openStream+` \(frame too large: false, shut down: false\)$`, o.Extra)
				},
			}
		}
		tooLarge := `(HTTP status )?431 Request Header Fields Too Large`
		m["opening metadata of 1,100 entries"] = opening(manyEntries(1100), "CallStream: 0…2, ok", http1Refusal)
		m["opening metadata over the frame limit"] = opening(bigMetadata(),
			`CallStream: none, `+tooLarge+` \(frame too large: false, shut down: false\)`, "("+http1Refusal+"|"+tooLarge+")")
		return m
	}(),
}

// ConnectJSONHTTP1 is the Connect protocol in JSON over HTTP/1.1: a unary
// call is a plain POST, as curl makes it.
var ConnectJSONHTTP1 = Profile{Name: "connect-json-http1", Differences: []*Difference{
	connectShapeWords("json", false), HTTP1HalfDuplex, HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPClientReadLimit, HTTPHeaderLimits, HTTPErrorUnbounded, HTTPServerOutlives, HTTPDeadlineReset, JSONBase64, JSONWords, HeaderMetadata, HTTPNoPreface}}

// ConnectMsgpackH2C is the Connect protocol in msgpack over HTTP/2
// without TLS.
var ConnectMsgpackH2C = Profile{Name: "connect-msgpack-h2c", Differences: []*Difference{
	connectShapeWords("msgpack", true), HTTPFlowControl, HTTP2OpeningLimits, HTTP2StreamEnds, HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPClientReadLimit, HTTPHeaderLimits, HTTPErrorUnbounded, HTTPServerOutlives, HTTPDeadlineReset, HeaderMetadata, HTTPNoPreface}}

// GRPCMsgpackH2C is gRPC in msgpack over HTTP/2 without TLS.
var GRPCMsgpackH2C = Profile{Name: "grpc-msgpack-h2c", Differences: []*Difference{
	GRPCShapeUnsaid, GRPCStreamOfUnary, HTTPFlowControl, HTTP2OpeningLimits, HTTP2StreamEnds, HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPClientReadLimit, HTTPHeaderLimits, HTTPErrorUnbounded, HTTPServerOutlives, HTTPDeadlineReset, HeaderMetadata, HTTPNoPreface}}

// GRPCWebJSONHTTP1 is gRPC-Web in JSON over HTTP/1.1, as a browser speaks
// it.
var GRPCWebJSONHTTP1 = Profile{Name: "grpcweb-json-http1", Differences: []*Difference{
	GRPCShapeUnsaid, HTTP1HalfDuplex, HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPClientReadLimit, HTTPHeaderLimits, HTTPErrorUnbounded, HTTPServerOutlives, HTTPDeadlineReset, JSONBase64, JSONWords, HeaderMetadata, HTTPNoPreface}}

func init() {
	Profiles = append(Profiles, ConnectJSONHTTP1, ConnectMsgpackH2C, GRPCMsgpackH2C, GRPCWebJSONHTTP1)
}

// effects is e for each case named.
func effects(names []string, e Effect) map[string]Effect {
	m := make(map[string]Effect, len(names))
	for _, n := range names {
		m[n] = e
	}
	return m
}

// callNamed matches the words that open a dispatch.Client's own failure,
// the path already made "<path>".
var callNamed = regexp.MustCompile(`^\S+ over <path>: `)

// unnamed is o with the error's words not naming the call and its path.
func unnamed(o Outcome) Outcome {
	o.Err = callNamed.ReplaceAllString(o.Err, "")
	return o
}

// headerMetadataRun calls with a key that is not an HTTP token, then with
// keys that are: how "deadline and metadata reach the handler, nothing else
// does" runs on the HTTP paths, whichever end refuses the first.
func headerMetadataRun(t *testing.T, c Caller) Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = context.WithValue(ctx, foreignKey{}, "secret")
	refused := c.Call(ctx, Call{Method: "Arith.Context", Args: Args{A: 5000}, Reply: new(CtxInfo),
		Metadata: dispatch.Metadata{"ключ": "значение"}})
	reply := new(CtxInfo)
	err := c.Call(ctx, Call{Method: "Arith.Context", Args: Args{A: 5000}, Reply: reply,
		Metadata: dispatch.Metadata{"user": "alice", "trace": "t-1"}})
	o := Outcome{Reply: fmt.Sprintf("%+v", *reply), Extra: fmt.Sprintf("%v (code %s)", refused, codeOf(refused))}
	observeErr(&o, err)
	return o
}
