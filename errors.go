package transport

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// Sentinel errors. Transports wrap them, so test with errors.Is.
var (
	// ErrClosed is returned by Send, Recv and Accept after the local Close.
	// It also matches net.ErrClosed.
	ErrClosed error = closedError{}

	// ErrTimeout is returned when a deadline passes. It is a net.Error whose
	// Timeout method reports true, and it also matches
	// os.ErrDeadlineExceeded.
	ErrTimeout error = timeoutError{}

	// ErrFrameTooLarge is returned by Send for a message larger than the
	// transport's limit (nothing is sent and the Socket stays open), and by
	// Recv when the peer announces such a frame (the Socket is closed, since
	// the rest of the stream cannot be trusted).
	ErrFrameTooLarge = errors.New("transport: frame too large")

	// ErrProtocol is returned by Recv when the peer sends bytes that are not
	// a valid frame (see WIRE.md). The Socket is closed.
	ErrProtocol = errors.New("transport: protocol error")

	// ErrConnectionRefused is returned by Dial when nobody listens on the
	// address. It also matches syscall.ECONNREFUSED.
	ErrConnectionRefused error = refusedError{}
)

type closedError struct{}

func (closedError) Error() string { return "transport: use of closed socket" }

// Is lets errors.Is(err, net.ErrClosed) hold for ErrClosed.
func (closedError) Is(target error) bool { return target == net.ErrClosed }

type timeoutError struct{}

func (timeoutError) Error() string   { return "transport: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// Is lets errors.Is(err, os.ErrDeadlineExceeded) hold for ErrTimeout.
func (timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

var _ net.Error = timeoutError{}

type refusedError struct{}

func (refusedError) Error() string { return "transport: connection refused" }

// Is lets errors.Is(err, syscall.ECONNREFUSED) hold for ErrConnectionRefused.
func (refusedError) Is(target error) bool { return target == syscall.ECONNREFUSED }
