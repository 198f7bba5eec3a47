package mux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"

	"github.com/hashicorp/yamux"
)

// slogLogger carries yamux's diagnostics to the transport's slog.Logger.
// yamux would otherwise print to os.Stderr, and its lines carry their level
// as a "[ERR]" or "[WARN]" prefix, which becomes the record's level here.
type slogLogger struct {
	l *slog.Logger
}

// newSessionLogger returns the logger of one session, tagged with its side
// and peer so that lines from many sessions can be told apart.
func newSessionLogger(l *slog.Logger, side, remote string) slogLogger {
	return slogLogger{l.With("transport", "mux", "side", side, "remote", remote)}
}

func (s slogLogger) Print(v ...any)                 { s.emit(fmt.Sprint(v...)) }
func (s slogLogger) Println(v ...any)               { s.emit(fmt.Sprintln(v...)) }
func (s slogLogger) Printf(format string, v ...any) { s.emitf(format, v) }

func (s slogLogger) emitf(format string, v []any) {
	level, _ := levelOf(format)
	if level > slog.LevelDebug && peerWentAway(v) {
		level = slog.LevelDebug
	}
	// Formatting is skipped when nobody listens: the default discards.
	if !s.l.Enabled(context.Background(), level) {
		return
	}
	_, rest := levelOf(fmt.Sprintf(format, v...))
	s.log(level, rest)
}

func (s slogLogger) emit(msg string) {
	level, rest := levelOf(msg)
	if !s.l.Enabled(context.Background(), level) {
		return
	}
	s.log(level, rest)
}

func (s slogLogger) log(level slog.Level, msg string) {
	msg = strings.TrimPrefix(msg, "yamux: ")
	s.l.Log(context.Background(), level, "yamux: "+strings.TrimSpace(msg))
}

// peerWentAway reports whether a yamux line's error says only that the
// peer went away, or that this end closed the connection: yamux logs its
// failed write of a frame as an error ("[ERR] yamux: Failed to write body:
// ... broken pipe"), but after a peer's crash or restart that is the
// expected end of the session, which the session's streams report to
// their callers (ErrSessionClosed and its cause). Such lines are Debug;
// yamux's other errors (a protocol error, a keepalive that timed out, a
// write that timed out) keep their level.
func peerWentAway(v []any) bool {
	for _, a := range v {
		err, ok := a.(error)
		if !ok {
			continue
		}
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
			errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, yamux.ErrSessionShutdown) {
			return true
		}
	}
	return false
}

// levelOf splits yamux's level prefix from a line.
func levelOf(msg string) (slog.Level, string) {
	for _, p := range []struct {
		prefix string
		level  slog.Level
	}{
		{"[ERR] ", slog.LevelError},
		{"[WARN] ", slog.LevelWarn},
		{"[INFO] ", slog.LevelInfo},
		{"[DEBUG] ", slog.LevelDebug},
	} {
		if rest, ok := strings.CutPrefix(msg, p.prefix); ok {
			return p.level, rest
		}
	}
	return slog.LevelInfo, msg
}

// discardLogger satisfies yamux.VerifyConfig when a configuration is checked
// without a session to log for.
type discardLogger struct{}

func (discardLogger) Print(...any)          {}
func (discardLogger) Println(...any)        {}
func (discardLogger) Printf(string, ...any) {}
