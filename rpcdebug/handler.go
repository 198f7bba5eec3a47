package rpcdebug

import (
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// Handler returns an http.Handler that shows srv's methods with the
// figures s has counted, and the replicas of the Clients shown
// (ShowReplicas): HTML tables by default, text tables when the request
// asks for text/plain (Accept) or has ?format=text.
func (s *Stats) Handler(srv *dispatch.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rows := s.Snapshot(srv)
		replicas := replicaRows(s.ReplicasSnapshot())
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Query().Get("format") == "text" || strings.HasPrefix(r.Header.Get("Accept"), "text/plain") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			writeText(w, rows)
			writeReplicasText(w, replicas)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := page.Execute(w, pageData{Rows: rows, Replicas: replicas}); err != nil {
			// Headers are out; all that is left is to stop writing.
			return
		}
	})
}

// writeText writes rows as an aligned text table.
func writeText(w io.Writer, rows []MethodStats) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tCALLS\tERRORS\tMEAN\tMAX\tSTREAMS\tOPEN\tMSGS-IN\tMSGS-OUT\tENDS\tPATHS")
	for _, m := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", m.Method, m.Calls, m.Errors, round(m.Mean), round(m.Max),
			m.Streams, m.Open, m.MsgsIn, m.MsgsOut, counts(m.Ends), paths(m.Paths))
	}
	tw.Flush()
	var enc []MethodStats
	for _, m := range rows {
		if m.Bodies != "" {
			enc = append(enc, m)
		}
	}
	if len(enc) == 0 {
		return
	}
	// What the bytes of the methods of raw bodies hold (a gRPC method's
	// protobuf messages), below the figures, which it would widen.
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tBODIES")
	for _, m := range enc {
		fmt.Fprintf(tw, "%s\t%s\n", m.Method, m.Bodies)
	}
	tw.Flush()
}

// round keeps three significant figures or so of a latency.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d
}

// paths lists the paths of a method's calls, "tcp=3 shortcut-copy=1",
// sorted by path.
func paths(p map[dispatch.Path]int64) string { return counts(p) }

// counts lists counts by their names, "canceled=1 ok=3", sorted by name;
// "-" for none.
func counts[K ~string](p map[K]int64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(p)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, p[k])
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

type pageData struct {
	Rows     []MethodStats
	Replicas []replicaRow
}

var page = template.Must(template.New("rpc").Funcs(template.FuncMap{"round": round, "paths": paths, "ends": counts[string]}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Services</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}th,td{padding:2px 10px;text-align:left}td.n{text-align:right}tr:nth-child(even){background:#f2f2f2}</style>
</head><body>
<h1>Services</h1>
<table>
<tr><th>Method</th><th>Calls</th><th>Errors</th><th>Mean</th><th>Max</th><th>Streams</th><th>Open</th><th>Msgs in</th><th>Msgs out</th><th>Ends</th><th>Paths</th></tr>
{{range .Rows}}<tr><td>{{.Method}}{{if .Bodies}}<br><small>{{.Bodies}}</small>{{end}}</td><td class="n">{{.Calls}}</td><td class="n">{{.Errors}}</td><td class="n">{{round .Mean}}</td><td class="n">{{round .Max}}</td><td class="n">{{.Streams}}</td><td class="n">{{.Open}}</td><td class="n">{{.MsgsIn}}</td><td class="n">{{.MsgsOut}}</td><td>{{ends .Ends}}</td><td>{{paths .Paths}}</td></tr>
{{end}}</table>
{{if .Replicas}}<h2>Replicas</h2>
<table>
<tr><th>Client</th><th>Replica</th><th>State</th><th>In flight</th><th>Failures</th><th>Ejections</th><th>Why</th></tr>
{{range .Replicas}}<tr><td>{{.Client}}</td><td>{{.Addr}}</td><td>{{.State}}</td><td class="n">{{.InFlight}}</td><td class="n">{{.Failures}}</td><td class="n">{{.Ejections}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
{{end}}</body></html>
`))
