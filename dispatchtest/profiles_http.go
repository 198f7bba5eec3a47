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
			Run: func(t *testing.T, c Caller) Outcome {
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
			},
			Check: func(t *testing.T, o Outcome) {
				assert.Equal(t, Outcome{Reply: "{HasDeadline:true DeadlineSane:true Metadata:map[trace:t-1 user:alice] SawForeign:false}",
					Extra: `net/http: invalid header field name "ключ" (code unavailable)`}, o)
			},
		},
	},
}

// HTTPDeadlineReset: a client whose deadline passes goes away — its
// HTTP/2 stream reset, its HTTP/1.1 connection closed — and nothing says
// why: the handler's context ends with the request's, canceled, when that
// arrives before the server's own deadline (Connect-Timeout-Ms,
// grpc-timeout, which counts from the request's arrival) passes.
var HTTPDeadlineReset = &Difference{
	Name: "a reset says no why",
	Doc:  "a client whose deadline passed goes away (an HTTP/2 reset, an HTTP/1.1 connection closed) without saying why: the handler's context may end canceled, when that arrives before the server's own deadline, which counts from the request's arrival, passes",
	Effects: map[string]Effect{
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

// ConnectJSONHTTP1 is the Connect protocol in JSON over HTTP/1.1: a unary
// call is a plain POST, as curl makes it.
var ConnectJSONHTTP1 = Profile{Name: "connect-json-http1", Differences: []*Difference{
	HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPDeadlineReset, JSONBase64, JSONWords, HeaderMetadata, HTTPNoPreface}}

// ConnectMsgpackH2C is the Connect protocol in msgpack over HTTP/2
// without TLS.
var ConnectMsgpackH2C = Profile{Name: "connect-msgpack-h2c", Differences: []*Difference{
	HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPDeadlineReset, HeaderMetadata, HTTPNoPreface}}

// GRPCMsgpackH2C is gRPC in msgpack over HTTP/2 without TLS.
var GRPCMsgpackH2C = Profile{Name: "grpc-msgpack-h2c", Differences: []*Difference{
	HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPDeadlineReset, HeaderMetadata, HTTPNoPreface}}

// GRPCWebJSONHTTP1 is gRPC-Web in JSON over HTTP/1.1, as a browser speaks
// it.
var GRPCWebJSONHTTP1 = Profile{Name: "grpcweb-json-http1", Differences: []*Difference{
	HTTPCodes, HTTPMethodPaths, ConnectGoWords, HTTPReadLimit, HTTPDeadlineReset, JSONBase64, JSONWords, HeaderMetadata, HTTPNoPreface}}

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
