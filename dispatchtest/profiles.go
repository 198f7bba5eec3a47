package dispatchtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The differences the paths of this repository declare, and their
// profiles. A path written elsewhere declares its own with these, or
// with Differences of its own.

// OneProtocol: the path's transport speaks one protocol, so there is no
// listener of another to dial (memory). The case "a listener of another
// protocol" asserts instead that the one protocol answers.
var OneProtocol = &Difference{
	Name: "one protocol",
	Doc:  "the transport speaks one protocol: there is no listener of another to mismatch",
	Effects: map[string]Effect{
		"a listener of another protocol": {
			Doc: "not run: the one protocol answers a call instead",
			Run: func(t *testing.T, c Caller) Outcome {
				reply := new(int)
				err := c.Call(context.Background(), Call{Method: "Arith.Multiply", Args: Args{2, 3}, Reply: reply})
				o := Outcome{Reply: fmt.Sprint(*reply)}
				observeErr(&o, err)
				return o
			},
			Check: func(t *testing.T, o Outcome) { assert.Equal(t, Outcome{Reply: "6"}, o) },
		},
	},
}

// withExtra is the reference outcome with Extra as the path's.
func withExtra(extra string) func(ref Outcome) Outcome {
	return func(ref Outcome) Outcome {
		ref.Extra = extra
		return ref
	}
}

// OneFrameLimit: the path's two ends share one frame limit (memory's
// Transport has one), the smaller of the two a case asks for. Where a case
// wants a message within one end's limit and over the other's, the end
// that sends it refuses it, as it refuses any message over the limit.
var OneFrameLimit = &Difference{
	Name: "one frame limit",
	Doc:  "the two ends share one frame limit, the smaller one a case asks for: the end that sends a message over it refuses it",
	Effects: map[string]Effect{
		"request over the server's frame limit": {
			Doc:  "the Client refuses the request before sending it (ErrFrameTooLarge), as it refuses any request over its limit; the connection goes on",
			Want: []func(Outcome) Outcome{withExtra("dispatch: arguments of Big.Len: transport: frame too large: 102429 bytes, limit 65536 (frame too large: true, shut down: false), handler ran: false")},
		},
		"reply over the client's frame limit": {
			Doc:  "the Server refuses the reply (CodeInternal), as it refuses any reply over its limit; the connection goes on",
			Want: []func(Outcome) Outcome{withExtra("dispatch: reply of Big.Make is too large: transport: frame too large: 102430 bytes, limit 65536 (frame too large: false, shut down: false), reply of 0")},
		},
		"a stream over a frame limit says why": {
			Doc: "the end that sends a message over the limit refuses it: the caller's Send fails, and its stream goes on; the handler's Send, or its end, fails and the caller gets its error; the opening frame is refused by the Client",
			Want: []func(Outcome) Outcome{withExtra(strings.Join([]string{
				"caller's message over the server's limit: Send refused: dispatch: message of L.Sink: transport: frame too large: 65653 bytes, limit 65536 (frame too large: true, shut down: false)",
				"opening frame over the server's limit: 0 messages, dispatch: opening a stream of L.Sink: transport: frame too large: 65600 bytes, limit 65536 (frame too large: true, shut down: false)",
				"CallStream, handler's message over the client's limit: 0 messages, dispatch: message of L.Make: transport: frame too large: 65653 bytes, limit 65536 (frame too large: false, shut down: false)",
				"CallStream, end over the client's limit: 0 messages, dispatch: end of stream of L.Make is too large: transport: frame too large: 65663 bytes, limit 65536 (frame too large: false, shut down: false)",
				"CallStream, ctx can end, handler's message over the client's limit: 0 messages, dispatch: message of L.Make: transport: frame too large: 65653 bytes, limit 65536 (frame too large: false, shut down: false)",
				"CallStream, ctx can end, end over the client's limit: 0 messages, dispatch: end of stream of L.Make is too large: transport: frame too large: 65663 bytes, limit 65536 (frame too large: false, shut down: false)",
				"OpenStream, handler's message over the client's limit: 0 messages, dispatch: message of L.Make: transport: frame too large: 65653 bytes, limit 65536 (frame too large: false, shut down: false)",
				"OpenStream, end over the client's limit: 0 messages, dispatch: end of stream of L.Make is too large: transport: frame too large: 65663 bytes, limit 65536 (frame too large: false, shut down: false)",
			}, "\n"))},
		},
		"error reply over the client's frame limit": {
			Doc:   "as \"error reply over the frame limit\", at the one limit: the Server answers CodeInternal without the message, and the connection goes on",
			Check: wantErrorReplyTooLarge("dispatch: reply of Err.METHOD is too large: transport: frame too large: \\d+ bytes, limit 65536 \\(frame too large: false, shut down: false\\) \\(code internal\\)"),
		},
	},
}

// Memory is the memory transport's path: zerodial's wire over channels.
var Memory = Profile{Name: "memory", Differences: []*Difference{OneProtocol, OneFrameLimit}}

// TCP is zerodial's wire over tcp, the reference path.
var TCP = Profile{Name: "tcp"}

// Mux is zerodial's wire over yamux streams.
var Mux = Profile{Name: "mux"}

// SHM is zerodial's calls over shared memory between processes of one
// host (the shm transport), each message a record in a ring.
var SHM = Profile{Name: "shm"}

// ShortcutCopy is the shortcut in copy mode: a Server in this process,
// no socket, the codec run once each way.
var ShortcutCopy = Profile{Name: "shortcut-copy"}

// ShortcutDirect is the shortcut in direct mode: the caller's values
// handed to the methods that borrow.
var ShortcutDirect = Profile{Name: "shortcut-direct"}

// Profiles are the paths of this repository, the columns of the table
// docs/conformance.md shows (Table).
var Profiles = []Profile{Memory, TCP, Mux, SHM, ShortcutCopy, ShortcutDirect}
