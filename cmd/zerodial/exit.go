package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zerodial/transport/dispatch"
)

// report prints err on stderr as one line and returns its exit code: a
// server's *dispatch.Error as "code: message" (exit 1, or 4 for a passed
// deadline), a failure as it says, anything else as a failure to reach
// the server (exit 3).
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	code, msg := classify(err)
	if msg != "" {
		fmt.Fprintln(stderr, oneLine(msg))
	}
	return code
}

func classify(err error) (int, string) {
	var f *failure
	if errors.As(err, &f) {
		return f.code, f.msg
	}
	var e *dispatch.Error
	if errors.As(err, &e) {
		code := string(e.Code)
		if code == "" {
			code = "unknown"
		}
		if e.Code == dispatch.CodeDeadlineExceeded {
			return exitDeadline, code + ": " + e.Message
		}
		return exitServer, code + ": " + e.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return exitDeadline, "deadline_exceeded: " + err.Error()
	}
	return exitTransport, "zerodial: " + err.Error()
}

// oneLine keeps a message on one line, so that a script reads one error
// per line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
