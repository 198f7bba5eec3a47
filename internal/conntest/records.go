package conntest

import (
	"context"
	"log/slog"
	"sync"
)

// Records is a slog.Handler that keeps every record it is given, at every
// level, for a test to look at what a logger was told.
type Records struct {
	mu   sync.Mutex
	list []slog.Record
}

// Enabled reports true: every level is kept.
func (r *Records) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns r: the attributes are not kept.
func (r *Records) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup returns r: the group is not kept.
func (r *Records) WithGroup(string) slog.Handler { return r }

// Handle keeps a copy of rec.
func (r *Records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec.Clone())
	return nil
}

// Lines returns the records for which keep reports true, in the order
// they came, each as its level and message ("WARN dispatch: ...").
func (r *Records) Lines(keep func(slog.Record) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for _, rec := range r.list {
		if keep(rec) {
			lines = append(lines, rec.Level.String()+" "+rec.Message)
		}
	}
	return lines
}

// Has reports whether a record with the message msg came, at any level.
func (r *Records) Has(msg string) bool {
	return len(r.Lines(func(rec slog.Record) bool { return rec.Message == msg })) > 0
}
