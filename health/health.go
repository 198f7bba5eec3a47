// Package health is a health service for dispatch Servers, in the shape of
// gRPC's health checking protocol: a Server answers Health.Check with the
// serving status of the whole server (the empty service name) or of one
// service, which the application sets. A load balancer or an
// orchestrator's probe calls it over any transport — or over HTTP, since a
// Server is also an http.Handler for probes that speak only HTTP.
//
// Before a graceful stop, call Shutdown: checks then answer NotServing, so
// that balancers stop sending calls before dispatch.Server.Shutdown turns
// them away.
//
// gRPC's streaming Watch is not offered: dispatch has no streams yet.
package health

import (
	"context"
	"net/http"
	"sync"

	"github.com/zerodial/transport/dispatch"
)

// Status is a serving status, named as gRPC's health checking protocol
// names them.
type Status string

// The statuses.
const (
	// Unknown is the status of a service registered without one.
	Unknown Status = "UNKNOWN"
	// Serving means calls are welcome.
	Serving Status = "SERVING"
	// NotServing means calls should go elsewhere.
	NotServing Status = "NOT_SERVING"
)

// Method is the method a health Server answers.
const Method = "Health.Check"

// CheckRequest asks for the status of Service; the empty name asks for the
// whole server's.
type CheckRequest struct {
	Service string
}

// CheckResponse is a status.
type CheckResponse struct {
	Status Status
}

// Server keeps serving statuses and answers checks. Make one with
// NewServer; it is safe for concurrent use.
type Server struct {
	mu       sync.RWMutex
	statuses map[string]Status
	shutdown bool
}

// NewServer returns a Server whose whole server ("") is Serving.
func NewServer() *Server {
	return &Server{statuses: map[string]Status{"": Serving}}
}

// SetServingStatus sets the status of service ("" for the whole server).
// After Shutdown it has no effect until Resume.
func (h *Server) SetServingStatus(service string, s Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.shutdown {
		h.statuses[service] = s
	}
}

// Shutdown sets every status to NotServing, and keeps them so: later
// SetServingStatus calls are ignored, so that nothing turns a stopping
// server back on.
func (h *Server) Shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shutdown = true
	for s := range h.statuses {
		h.statuses[s] = NotServing
	}
}

// Resume undoes Shutdown: every status becomes Serving again.
func (h *Server) Resume() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shutdown = false
	for s := range h.statuses {
		h.statuses[s] = Serving
	}
}

// status returns service's status, false if it is not known.
func (h *Server) status(service string) (Status, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s, ok := h.statuses[service]
	return s, ok
}

// errUnknown is the answer for a service with no status.
func errUnknown(service string) error {
	return &dispatch.Error{Code: dispatch.CodeNotFound, Message: "health: unknown service " + service}
}

// Register makes srv answer Method with h's statuses. A service with no
// status fails the check with dispatch.CodeNotFound.
func (h *Server) Register(srv *dispatch.Server) error {
	return dispatch.Handle(srv, Method, func(ctx context.Context, req *CheckRequest, resp *CheckResponse) error {
		s, ok := h.status(req.Service)
		if !ok {
			return errUnknown(req.Service)
		}
		resp.Status = s
		return nil
	})
}

// ServeHTTP answers an HTTP probe with the status of the service named by
// the "service" query parameter (the whole server without one): 200 for
// Serving, 503 for any other status, 404 for an unknown service; the body
// is the status.
func (h *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	service := r.URL.Query().Get("service")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	s, ok := h.status(service)
	switch {
	case !ok:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("SERVICE_UNKNOWN\n"))
		return
	case s != Serving:
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write([]byte(string(s) + "\n"))
}

// Check asks the Server behind c for service's status ("" for the whole
// server's).
func Check(ctx context.Context, c *dispatch.Client, service string) (Status, error) {
	var resp CheckResponse
	if err := c.Call(ctx, Method, CheckRequest{Service: service}, &resp); err != nil {
		return "", err
	}
	return resp.Status, nil
}
