package dispatch

import (
	"testing"

	"github.com/zerodial/transport/internal/rpcwire"
)

// What admissionRefusal builds, isAdmissionRefusal recognises, also as a
// Client reads it back from the header of an end of stream (the wire
// carries a refusal's code and message only); a handler's error of the
// same code, or of the same wording and another code, is no refusal.
func TestAdmissionRefusal(t *testing.T) {
	for _, tc := range []struct {
		what  string
		limit int64
		want  string
	}{
		{"calls", 1, "dispatch: too many calls in flight on this connection (limit 1)"},
		{"bytes", 262144, "dispatch: too many bytes in flight on this connection (limit 262144)"},
	} {
		e := admissionRefusal(tc.what, tc.limit)
		if e.Code != CodeResourceExhausted || e.Message != tc.want {
			t.Errorf("admissionRefusal(%q, %d) = %v %q, want %v %q (the wire's wording)", tc.what, tc.limit, e.Code, e.Message, CodeResourceExhausted, tc.want)
		}
		if !isAdmissionRefusal(e) {
			t.Errorf("isAdmissionRefusal(%q) = false", e.Message)
		}
		h := endHeader("1", nil, e)
		read := &Error{Code: Code(h[rpcwire.ErrorCode]), Message: h[rpcwire.Error]}
		if !isAdmissionRefusal(read) {
			t.Errorf("isAdmissionRefusal of %v as read from the wire = false", h)
		}
	}
	for _, e := range []*Error{
		{Code: CodeResourceExhausted, Message: "quota exceeded"},
		{Code: CodeUnknown, Message: admissionPrefix + "calls in flight on this connection (limit 1)"},
	} {
		if isAdmissionRefusal(e) {
			t.Errorf("isAdmissionRefusal(%v %q) = true for a handler's error", e.Code, e.Message)
		}
	}
}
