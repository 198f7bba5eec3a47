//go:build !linux

package shm

import (
	"context"
	"errors"

	"github.com/zerodial/transport"
)

// unsupported is every Dial's and Listen's error off Linux.
var unsupported = errors.New("shm: shared memory between processes needs Linux (memfd and SCM_RIGHTS); " +
	"on this system the tcp or mux transport over a unix socket serves the same host (\"unix:PATH\", docs/unix.md)")

// Dial fails: shared memory needs Linux.
func (t *Transport) Dial(context.Context, string) (transport.Socket, error) { return nil, t.err }

// Listen fails: shared memory needs Linux.
func (t *Transport) Listen(string) (transport.Listener, error) { return nil, t.err }
