package rpcdebug

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// ShowReplicas shows the replicas of c, a Client of replicas
// (dispatch.WithResolver), on the page under name (its target, say): each
// replica in or out, until when and why, its calls in flight and its
// recent failures — what a program's callers see of the services it calls,
// beside what its Server serves. Showing another Client under the same
// name replaces it; a nil c stops showing name.
func (s *Stats) ShowReplicas(name string, c *dispatch.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == nil {
		delete(s.clients, name)
		return
	}
	s.clients[name] = c
}

// ClientReplicas is the replicas of one Client shown (ShowReplicas), at
// one moment.
type ClientReplicas struct {
	Name     string
	Replicas []dispatch.ReplicaState
}

// ReplicasSnapshot returns the replicas of the Clients shown, sorted by
// name.
func (s *Stats) ReplicasSnapshot() []ClientReplicas {
	s.mu.RLock()
	clients := maps.Clone(s.clients)
	s.mu.RUnlock()
	out := make([]ClientReplicas, 0, len(clients))
	for _, name := range slices.Sorted(maps.Keys(clients)) {
		out = append(out, ClientReplicas{Name: name, Replicas: clients[name].Replicas()})
	}
	return out
}

// replicaRow is one replica as the page shows it.
type replicaRow struct {
	Client, Addr, State string
	InFlight            int64
	Failures, Ejections int
	Why                 string
}

func replicaRows(cs []ClientReplicas) []replicaRow {
	var rows []replicaRow
	for _, c := range cs {
		for _, r := range c.Replicas {
			row := replicaRow{Client: c.Name, Addr: r.Addr, State: "in", InFlight: r.InFlight,
				Failures: r.Failures, Ejections: r.Ejections, Why: "-"}
			switch {
			case !r.In && !r.Until.IsZero():
				row.State = fmt.Sprintf("out until %s (%s left)", r.Until.Format(time.DateTime), time.Until(r.Until).Round(time.Second))
			case !r.In:
				row.State = "out"
			}
			if r.Local {
				row.State += " (local)"
			}
			switch {
			case r.Why != nil:
				row.Why = oneLine(r.Why.Error())
			case r.LastFailure != nil:
				row.Why = "last failure: " + oneLine(r.LastFailure.Error())
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// oneLine keeps an error's text on one line of a table.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeReplicasText writes the replicas as an aligned text table, after a
// blank line; nothing when no Client is shown.
func writeReplicasText(w io.Writer, rows []replicaRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tREPLICA\tSTATE\tIN-FLIGHT\tFAILURES\tEJECTIONS\tWHY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.Client, r.Addr, r.State, r.InFlight, r.Failures, r.Ejections, r.Why)
	}
	tw.Flush()
}
