package dispatchtest_test

import (
	"testing"

	"github.com/zerodial/transport/dispatchtest"
)

// An HTTP/2 refusal of oversize request metadata whose error names a port
// holding "431" (127.0.0.1:43164) is the server's GOAWAY, not a 431 with
// other words: HTTPHeaderLimits' check accepts it. It once took the port
// for the status, and failed a run whose client happened to get that port.
func TestHTTPHeaderLimitsPortIsNotStatus(t *testing.T) {
	check := dispatchtest.HTTPHeaderLimits.Effects["request metadata over the frame limit"].Check
	const goaway = `http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=COMPRESSION_ERROR, debug="" (frame too large: false, shut down: false), reply 0; ` +
		`Post "http://127.0.0.1:45301/Keeper/Len": write tcp 127.0.0.1:43164->127.0.0.1:45301: write: connection reset by peer (frame too large: false, shut down: false), reply 0`
	check(t, dispatchtest.Outcome{Extra: goaway})
	const status = "HTTP status 431 Request Header Fields Too Large (frame too large: false, shut down: false), reply 0; 431 Request Header Fields Too Large (frame too large: false, shut down: false), reply 0"
	check(t, dispatchtest.Outcome{Extra: status})
}
