package dispatch

import (
	"fmt"
	"testing"
)

// What toError gives a caller shares no memory with the handler's *Error:
// not the Error, not its details' slice, not a detail's bytes. Every path
// takes the caller's error from toError, so this holds for the shortcut's
// direct mode, which copies nothing else of an error.
func TestToErrorCopiesDetails(t *testing.T) {
	he := (&Error{Code: CodeAborted, Message: "m"}).WithDetails(ErrorDetail{Type: "a", Value: []byte("one")}, ErrorDetail{Type: "b", Value: []byte("two")})
	got := toError(fmt.Errorf("wrapped: %w", he))
	if got == he || len(got.details) != 2 {
		t.Fatalf("toError = %p with %d details, handler's %p", got, len(got.details), he)
	}
	if &got.details[0] == &he.details[0] {
		t.Error("the details' slice is shared")
	}
	for i := range got.details {
		if &got.details[i].Value[0] == &he.details[i].Value[0] {
			t.Errorf("detail %d's bytes are shared", i)
		}
		if string(got.details[i].Value) != string(he.details[i].Value) || got.details[i].Type != he.details[i].Type {
			t.Errorf("detail %d: %+v, want %+v", i, got.details[i], he.details[i])
		}
	}
}

// A nil *Error has no details, and given one becomes an Error of its own.
func TestNilErrorDetails(t *testing.T) {
	var e *Error
	if e.Details() != nil {
		t.Error("a nil *Error has details")
	}
	got := e.WithDetail(1)
	if got == nil || got.Code != CodeUnknown || got.Message != "" || len(got.Details()) != 1 {
		t.Errorf("nil.WithDetail(1) = %+v", got)
	}
}

// NewErrorDetail of a []byte, which msgpack's codec returns as is, makes a
// detail whose bytes are its own.
func TestNewErrorDetailOfBytes(t *testing.T) {
	b := []byte("raw")
	d, err := NewErrorDetail(b)
	if err != nil || &d.Value[0] == &b[0] || d.Type != "[]uint8" {
		t.Fatalf("NewErrorDetail([]byte) = %+v, %v; shares its bytes: %v", d, err, err == nil && &d.Value[0] == &b[0])
	}
	if _, err := NewErrorDetail(make(chan int)); err == nil {
		t.Error("a chan encodes")
	}
}
