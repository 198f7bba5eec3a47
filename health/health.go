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
// Watch (and the client's health.Watch) streams a service's status as it
// changes, as gRPC's Watch does, so that a balancer learns of a change at
// once rather than at its next check.
package health

import (
	"context"
	"fmt"
	"iter"
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
	// ServiceUnknown is what Watch reports for a service with no status
	// (Check fails instead), until it gets one.
	ServiceUnknown Status = "SERVICE_UNKNOWN"
)

// Method is the method a health Server answers.
const Method = "Health.Check"

// WatchMethod is the streaming method that reports a service's status as
// it changes.
const WatchMethod = "Health.Watch"

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
	// changed is closed, and replaced, whenever a status may have changed:
	// it wakes every Watch.
	changed chan struct{}
}

// NewServer returns a Server whose whole server ("") is Serving.
func NewServer() *Server {
	return &Server{statuses: map[string]Status{"": Serving}, changed: make(chan struct{})}
}

// notifyLocked wakes the watchers; h.mu is held for writing.
func (h *Server) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// SetServingStatus sets the status of service ("" for the whole server).
// After Shutdown it has no effect until Resume.
func (h *Server) SetServingStatus(service string, s Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.shutdown {
		h.statuses[service] = s
		h.notifyLocked()
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
	h.notifyLocked()
}

// Resume undoes Shutdown: every status becomes Serving again.
func (h *Server) Resume() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.shutdown = false
	for s := range h.statuses {
		h.statuses[s] = Serving
	}
	h.notifyLocked()
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

// watched returns service's status, ServiceUnknown if it has none, and
// the channel closed at the next change.
func (h *Server) watched(service string) (Status, <-chan struct{}) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s, ok := h.statuses[service]
	if !ok {
		s = ServiceUnknown
	}
	return s, h.changed
}

// Register makes srv answer Method with h's statuses — a service with no
// status fails the check with dispatch.CodeNotFound — and WatchMethod with
// their changes.
func (h *Server) Register(srv *dispatch.Server) error {
	err := dispatch.Handle(srv, Method, func(ctx context.Context, req *CheckRequest, resp *CheckResponse) error {
		s, ok := h.status(req.Service)
		if !ok {
			return errUnknown(req.Service)
		}
		resp.Status = s
		return nil
	})
	if err != nil {
		return err
	}
	return dispatch.HandleStream(srv, WatchMethod, h.watch)
}

// watch streams the status of the service the caller names: the current
// one at once, then each change, until the caller stops or the Server
// begins to stop. Then it reports NotServing and returns, for Shutdown
// waits for every stream in flight.
func (h *Server) watch(ctx context.Context, s *dispatch.ServerStream[CheckRequest, CheckResponse]) error {
	var service string
	for req, err := range s.Recv() { // the one request
		if err != nil {
			return err
		}
		service = req.Service
	}
	var last Status
	for {
		st, changed := h.watched(service)
		if st != last {
			if err := s.Send(&CheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-changed:
		case <-dispatch.ShuttingDown(ctx):
			if last != NotServing {
				if err := s.Send(&CheckResponse{Status: NotServing}); err != nil {
					return err
				}
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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

// Watch asks the Server behind c for service's status ("" for the whole
// server's) and yields it, then every change, until ctx ends (yielded as
// the last error) or the caller stops ranging, which ends the watch. When
// the dispatch Server's Shutdown begins, the watch yields NotServing (if
// that was not the last status) and ends without an error, so that the
// Server's Shutdown does not wait for its watchers.
func Watch(ctx context.Context, c *dispatch.Client, service string) iter.Seq2[Status, error] {
	return func(yield func(Status, error) bool) {
		for resp, err := range dispatch.CallStream[CheckRequest, CheckResponse](ctx, c, WatchMethod, &CheckRequest{Service: service}) {
			if err != nil {
				yield("", err)
				return
			}
			if !yield(resp.Status, nil) {
				return
			}
		}
	}
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

// Checker returns a dispatch.ReplicaCheck that asks each replica for
// service's status ("" for the whole server's): a replica that does not
// answer Serving — NotServing once its Shutdown began, or no answer — is
// left out of a Client of replicas until it does
// (dispatch.WithReplicaCheck).
func Checker(service string) dispatch.ReplicaCheck {
	return func(ctx context.Context, c *dispatch.Client) error {
		s, err := Check(ctx, c, service)
		if err != nil {
			return err
		}
		if s != Serving {
			return fmt.Errorf("health: %q is %s", service, s)
		}
		return nil
	}
}
