package dispatchtest

import (
	"context"
	"fmt"
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

// Memory is the memory transport's path: zerodial's wire over channels.
var Memory = Profile{Name: "memory", Differences: []*Difference{OneProtocol}}

// TCP is zerodial's wire over tcp, the reference path.
var TCP = Profile{Name: "tcp"}

// Mux is zerodial's wire over yamux streams.
var Mux = Profile{Name: "mux"}

// ShortcutCopy is the shortcut in copy mode: a Server in this process,
// no socket, the codec run once each way.
var ShortcutCopy = Profile{Name: "shortcut-copy"}

// ShortcutDirect is the shortcut in direct mode: the caller's values
// handed to the methods that borrow.
var ShortcutDirect = Profile{Name: "shortcut-direct"}

// Profiles are the paths of this repository, the columns of the table
// docs/conformance.md shows (Table).
var Profiles = []Profile{Memory, TCP, Mux, ShortcutCopy, ShortcutDirect}
