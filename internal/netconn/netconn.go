// Package netconn holds what the tcp and mux transports do alike with a
// network connection, so that each concern has one owner: the errors of a
// failed dial (this file), tuning a connection, setting one up as either
// end — TLS, then the connection preface of WIRE.md — (setup.go), and a
// listener's accept loop (accept.go). The transports differ in what they
// run over the connection once it is set up, not in how they get it.
package netconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/zerodial/transport"
)

// DialError maps a dial failure to the transport's errors, as the
// transport.Transport contract asks of Dial: a refused connection matches
// transport.ErrConnectionRefused, as does a unix socket path with no file
// (its listener closed and removed it, or never began), and a dial cut short by ctx matches
// ctx.Err() (the net package's error does not always say so). Other errors
// are returned as they are.
//
// A dial that timed out when ctx's deadline had passed matches
// context.DeadlineExceeded even while ctx.Err() is still nil: the net
// package sets ctx's deadline on the socket, and on a loaded machine the
// poller can report it before ctx's own timer has run (seen as a bare
// "i/o timeout" under .ci/run --stress).
func DialError(ctx context.Context, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("%w: %w", transport.ErrConnectionRefused, err)
	}
	ctxErr := ctx.Err()
	if ctxErr == nil && isTimeout(err) {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			ctxErr = context.DeadlineExceeded
		}
	}
	if ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	return err
}

// Tune sets what the transports need of a TCP connection, and leaves other
// connections alone: TCP_NODELAY, which Go sets by default, set again so
// that nothing relies on the default. Both transports write a message's
// bytes in as few writes as they can (tcp one per message, yamux a
// frame's header and body apart), and Nagle's algorithm would hold the
// last of them back for a round trip.
func Tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}
