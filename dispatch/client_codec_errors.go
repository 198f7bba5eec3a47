package dispatch

import (
	"strconv"
	"strings"
)

// serverError turns the text a net/rpc server answers a failed call with
// (rpc.ServerError to net/rpc's Client) into the *Error a Client over a
// codec returns, with the code the words say: net/rpc carries no code. The
// words known are net/rpc's own and those a dispatch Server sends through
// ServeCodec, each with the code the same refusal has on zerodial's wire
// (codecWords); any other text is a handler's error, CodeUnknown.
func serverError(text string) *Error {
	if code, ok := noMessageCode(text); ok {
		return &Error{Code: code}
	}
	for _, w := range codecWords {
		if strings.HasPrefix(text, w.prefix) && strings.HasSuffix(text, w.suffix) && len(text) >= len(w.prefix)+len(w.suffix) {
			return &Error{Code: w.code, Message: text}
		}
	}
	return &Error{Code: CodeUnknown, Message: text}
}

// codecWords are the texts a net/rpc server answers with whose code is
// known: each opens with prefix and ends with suffix.
var codecWords = []struct {
	prefix, suffix string
	code           Code
}{
	// dispatch's, through ServeCodec (errors.go, router.go, stream.go).
	{errShuttingDown.Message, "", CodeUnavailable},
	{admissionPrefix, "", CodeResourceExhausted},
	{"dispatch: decoding arguments of ", "", CodeInvalidArgument},
	{"dispatch: panic in ", "", CodeInternal},
	{"dispatch: handler of ", " ended its goroutine (runtime.Goexit)", CodeInternal},
	{"dispatch: encoding reply of ", "", CodeInternal},
	{"dispatch: ", " is a streaming method; call it with OpenStream or CallStream", CodeInvalidArgument},
	// net/rpc's Server's, which dispatch's Server uses too, with these codes.
	{"rpc: can't find service ", "", CodeNotFound},
	{"rpc: can't find method ", "", CodeNotFound},
	{"rpc: service/method request ill-formed: ", "", CodeInvalidArgument},
}

// noMessageCode reads the words ServeCodec sends for an *Error with a code
// and no message, which net/rpc would take for success: the code comes
// back, and the empty message.
func noMessageCode(text string) (Code, bool) {
	const open, end = "dispatch: error with code ", " and no message"
	q, ok := strings.CutPrefix(text, open)
	if !ok {
		return "", false
	}
	q, ok = strings.CutSuffix(q, end)
	if !ok {
		return "", false
	}
	code, err := strconv.Unquote(q)
	if err != nil {
		return "", false
	}
	return Code(code), true
}
