package dispatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestServerError: each word a net/rpc server may answer with becomes the
// *Error the same refusal is on zerodial's wire; any other text is
// CodeUnknown. The dispatch words come from the functions that make them,
// so a change of words there breaks this test rather than the mapping
// silently.
func TestServerError(t *testing.T) {
	srv := NewServer()
	_, unknownMethod := srv.lookup("Nope.Nope")
	for _, want := range []*Error{
		errShuttingDown,
		admissionRefusal("calls", 3),
		admissionRefusal("bytes", 1<<20),
		unknownMethod,
		{Code: CodeNotFound, Message: "rpc: can't find method Arith.Nope"},
		{Code: CodeInvalidArgument, Message: "rpc: service/method request ill-formed: Nope"},
		{Code: CodeInvalidArgument, Message: "dispatch: decoding arguments of Arith.Add: msgpack: bad"},
		srv.panicked(&method{name: "Arith.Panic"}, "kaboom"),
		goexitError("Arith.Exit"),
		encodeError("Arith.Chan", errNoStreams("x")),
		streamingError("Feed.Count"),
		{Code: CodeUnknown, Message: "legacy: refused"},
		{Code: CodeUnknown, Message: "dispatch: something else"},
		{Code: CodeUnknown, Message: "dispatch: "}, // the streaming words' ends, overlapping
		{Code: CodeUnknown, Message: "rpc: can't find"},
	} {
		assert.Equal(t, *want, *serverError(want.Message), want.Message)
	}
	// ServeCodec's words for an *Error with a code and no message give
	// back both; words that only look like them are a handler's text.
	assert.Equal(t, Error{Code: CodeAborted}, *serverError(`dispatch: error with code "aborted" and no message`))
	assert.Equal(t, Error{Code: CodeUnknown}, *serverError(`dispatch: error with code "" and no message`))
	for _, text := range []string{
		`dispatch: error with code aborted and no message`,
		`dispatch: error with code "aborted" and no messages`,
		`dispatch: error with code "aborted`,
	} {
		assert.Equal(t, Error{Code: CodeUnknown, Message: text}, *serverError(text))
	}
}
