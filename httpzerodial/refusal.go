package httpzerodial

import (
	"encoding/json"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
)

// refusalWriter is the ResponseWriter connect-go answers through when a
// request may be one it refuses with a bare status and an empty body: 405
// for an HTTP method it does not serve (it serves POST), 415 for a
// Content-Type it does not. It gives those answers a Connect error body
// that says what to send instead; connect-go's headers (Allow,
// Accept-Post) stay. Anything else passes through: connect-go may well
// serve the request (a Content-Type fastTypes does not list, in a codec
// given through WithConnectOptions).
type refusalWriter struct {
	http.ResponseWriter
	r       *http.Request
	name    string // the method's
	stream  bool   // a streaming method
	refused bool
}

func (w *refusalWriter) WriteHeader(status int) {
	if w.refused || (status != http.StatusMethodNotAllowed && status != http.StatusUnsupportedMediaType) {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.refused = true
	var msg string
	if status == http.StatusMethodNotAllowed {
		msg = fmt.Sprintf("httpzerodial: %s is called with POST, not %s", w.name, w.r.Method)
	} else {
		msg = fmt.Sprintf("httpzerodial: %s does not take Content-Type %q; %s", w.name, w.r.Header.Get("Content-Type"), w.howToSend())
	}
	body, _ := json.Marshal(wireError{Code: connect.CodeUnimplemented.String(), Message: msg}) // cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(status)
	_, _ = w.ResponseWriter.Write(body)
}

// howToSend says which Content-Types the method takes.
func (w *refusalWriter) howToSend() string {
	if w.stream {
		return "POST its messages as a Connect stream, application/connect+json (or +msgpack), or open it with gRPC or gRPC-Web, application/grpc+json (or +msgpack)"
	}
	return "POST its arguments as application/json (or application/msgpack), or call it with gRPC or gRPC-Web, application/grpc+json (or +msgpack)"
}

// Write drops what follows a refusal: connect-go writes nothing there.
func (w *refusalWriter) Write(p []byte) (int, error) {
	if w.refused {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes, which connect-go's streams need of their writer.
func (w *refusalWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the writer beneath.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wireError is the JSON body of a Connect error.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
