package mux

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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
	// Formatting is skipped when nobody listens: the default discards.
	if !s.l.Enabled(context.Background(), level) {
		return
	}
	s.emit(fmt.Sprintf(format, v...))
}

func (s slogLogger) emit(msg string) {
	level, rest := levelOf(msg)
	if !s.l.Enabled(context.Background(), level) {
		return
	}
	rest = strings.TrimPrefix(rest, "yamux: ")
	s.l.Log(context.Background(), level, "yamux: "+strings.TrimSpace(rest))
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
