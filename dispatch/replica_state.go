package dispatch

import (
	"log/slog"
	"time"
)

// ReplicaState is one replica of a Client of replicas (WithResolver) as the
// Client sees it at one moment: what a debug page or an operator needs to
// tell why calls go where they go.
type ReplicaState struct {
	// Addr is the replica's address, as the resolver reported it.
	Addr string
	// In reports whether calls are sent to the replica: it is not left
	// out after failures (WithEjection) and its last check
	// (WithReplicaCheck), if any, succeeded. When every replica is out,
	// calls still go to the one whose time out ends first.
	In bool
	// Until is when a replica left out after failures is let back in;
	// zero when it is not left out for failures.
	Until time.Time
	// Why is why the replica is out: the failure that ejected it (while
	// Until is ahead), or what its failed check said; nil while it is in.
	Why error
	// InFlight is the calls and streams the replica has in flight.
	InFlight int64
	// Failures is the transport failures in a row that count towards its
	// next ejection, LastFailure the last of them or of those that ejected
	// it; both are cleared by a call that succeeds.
	Failures    int
	LastFailure error
	// Ejections is the replica's ejections since its last success, each
	// doubling the time out.
	Ejections int
	// Local reports whether the replica is served by this process and
	// called on the shortcut (WithShortcut).
	Local bool
}

// Replicas returns the state of each replica of a Client of replicas
// (WithResolver), in the order its resolver reported them; nil for a
// Client of one address. Ejections and readmissions are logged at Info
// (WithLogger) as they happen.
func (c *Client) Replicas() []ReplicaState {
	if c.set == nil {
		return nil
	}
	list := *c.set.list.Load()
	now := c.set.clock.now()
	out := make([]ReplicaState, 0, len(list))
	for _, r := range list {
		h := r.health.state()
		st := ReplicaState{Addr: r.addr, In: r.usable(now), InFlight: r.inflight.Load(), Failures: h.fails,
			LastFailure: h.last, Ejections: h.ejected, Local: r.isLocal()}
		if h.out > now {
			st.Until, st.Why = c.set.clock.wall(h.out), h.why
		} else if p := r.checkErr.Load(); r.unfit.Load() && p != nil {
			st.Why = *p
		}
		out = append(out, st)
	}
	return out
}

// log is the Client's logger.
func (s *replicaSet) log() *slog.Logger { return s.sub.logger }

// checked records the outcome of r's ReplicaCheck, logging the changes.
func (s *replicaSet) checked(r *replica, err error) {
	if s.closed.IsSet() {
		return // the check was cut short by Close: it says nothing of r
	}
	if err != nil {
		r.checkErr.Store(&err)
	}
	switch was := r.unfit.Swap(err != nil); {
	case err != nil && !was:
		s.log().Info("dispatch: replica left out: its check failed", "target", s.target, "replica", r.addr, "err", err)
	case err == nil && was:
		s.log().Info("dispatch: replica readmitted: its check succeeded", "target", s.target, "replica", r.addr)
	}
}
