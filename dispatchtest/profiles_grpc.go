package dispatchtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zerodial/transport/dispatch"
)

// The path of grpczerodial's ClientConn: the suite's services called
// through grpc.ClientConnInterface, their messages in msgpack
// (grpc.ForceCodec), over a dispatch.Client on tcp. A failure is a gRPC
// status that wraps dispatch's error (errors.Unwrap): what the caller sees
// through it is the reference path's, but for what gRPC's API words
// otherwise, declared below.

// grpcCodes are the codes gRPC has, by dispatch's names.
var grpcCodes = map[dispatch.Code]bool{
	dispatch.CodeCanceled: true, dispatch.CodeUnknown: true, dispatch.CodeInvalidArgument: true,
	dispatch.CodeDeadlineExceeded: true, dispatch.CodeNotFound: true, dispatch.CodeAlreadyExists: true,
	dispatch.CodePermissionDenied: true, dispatch.CodeResourceExhausted: true, dispatch.CodeFailedPrecondition: true,
	dispatch.CodeAborted: true, dispatch.CodeOutOfRange: true, dispatch.CodeUnimplemented: true,
	dispatch.CodeInternal: true, dispatch.CodeUnavailable: true, dispatch.CodeDataLoss: true,
	dispatch.CodeUnauthenticated: true,
}

// GRPCStatusCodes: every status has one of gRPC's codes, and gRPC names a
// missing method or service unimplemented.
var GRPCStatusCodes = &Difference{
	Name: "gRPC's codes",
	Doc:  "a status has one of gRPC's codes: a handler's error with a code of its own is unknown, and the router's \"can't find\" is unimplemented, as gRPC says it; the *dispatch.Error the status wraps keeps its code",
	Effects: effects([]string{"handler error with code", "unknown service", "unknown method", "unexported method", "unknown stream method"}, Effect{Doc: "the code gRPC gives it", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
		switch {
		case o.Code == dispatch.CodeNotFound && strings.HasPrefix(o.Err, "rpc: can't find "):
			o.Code = dispatch.CodeUnimplemented
		case !grpcCodes[o.Code]:
			o.Code = dispatch.CodeUnknown
		}
		return o
	}}}),
}

// GRPCMethodNames: a method is named by gRPC's full name,
// "/Service/Method", which the ClientConn reads before any call.
var GRPCMethodNames = &Difference{
	Name: "methods are gRPC's names",
	Doc:  "a method is named /Service/Method: a name without a dot is refused by the ClientConn before any call, unimplemented, as gRPC refuses a malformed name",
	Effects: map[string]Effect{
		"ill-formed name": {Doc: `CodeUnimplemented, in grpczerodial's words: malformed method name "/ArithMultiply"`, Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Code = dispatch.CodeUnimplemented
			o.Err = `grpczerodial: malformed method name "/ArithMultiply": want "/package.Service/Method"`
			return o
		}}},
	},
}

// GRPCDecodesReply: the ClientConn decodes the reply with the codec the
// call forced, as grpc-go's does; a reply it cannot decode, or a nil one
// to decode into, fails the call after it was made, with internal.
var GRPCDecodesReply = &Difference{
	Name: "the ClientConn decodes the reply",
	Doc:  "the reply is decoded by the codec the call forced (grpc.ForceCodec), after the call: a nil reply is not refused before the call, as dispatch's Client refuses it, and a reply that does not decode fails with internal in grpczerodial's words, as grpc-go's client fails a reply its codec cannot read",
	Effects: map[string]Effect{
		"nil reply":       {Doc: "the call is made; decoding into nil fails with internal", Check: nilReplyDecoded},
		"typed nil reply": {Doc: "the call is made; decoding into nil fails with internal", Check: nilReplyDecoded},
		"a reply of another type": {Doc: "internal, in grpczerodial's words", Want: []func(Outcome) Outcome{func(o Outcome) Outcome {
			o.Err = strings.Replace(o.Err, "dispatch: decoding reply of Arith.Fill: ", "grpczerodial: decoding reply of /Arith/Fill with codec msgpack: ", 1)
			o.ErrType = "*dispatch.Error"
			o.Code = dispatch.CodeInternal
			return o
		}}},
	},
}

func nilReplyDecoded(t *testing.T, o Outcome) {
	assert.Equal(t, dispatch.CodeInternal, o.Code)
	assert.Contains(t, o.Err, "grpczerodial: decoding reply of /Arith/Multiply with codec msgpack: codec: nil pointer: cannot unmarshal into ")
	assert.NotEmpty(t, o.Interceptor, "the call is made")
}

// GRPCStreamOpening: a server stream is opened as a stream of any shape
// (grpc.ClientConnInterface's NewStream), whose opening frame holds one
// header entry more than dispatch's CallStream's.
var GRPCStreamOpening = &Difference{
	Name: "server streams opened as any stream",
	Doc:  "NewStream opens every stream as dispatch's OpenStream does: a server stream's opening frame has the header entry of a stream opened both ways, one more than CallStream's",
	Effects: map[string]Effect{
		"opening metadata of 1,100 entries":     {Doc: "1105 header entries for a server stream too", Check: wantStreamRefused("1105 header entries, limit 1024", "1105 header entries, limit 1024")},
		"opening metadata over the frame limit": {Doc: "a few bytes more for a server stream", Check: wantStreamRefused(`\d+ bytes, limit 4194304`, `\d+ bytes, limit 4194304`)},
	},
}

// GRPCClientConnTCP is grpczerodial's ClientConn over tcp.
var GRPCClientConnTCP = Profile{Name: "grpc-clientconn-tcp", Differences: []*Difference{
	GRPCStatusCodes, GRPCMethodNames, GRPCDecodesReply, GRPCStreamOpening}}

func init() { Profiles = append(Profiles, GRPCClientConnTCP) }
