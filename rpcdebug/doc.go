// Package rpcdebug shows what a dispatch.Server serves and how its methods
// fare, as net/rpc's /debug/rpc page does: every method registered, with
// its calls, errors and latency, its streams (opened, still open, ended by
// outcome, messages each way, those of the streams still open included),
// and the paths its calls and streams took (memory, tcp, mux, the
// shortcut's).
//
// Counting is a pair of interceptors, one of calls and one of streams,
// installed by one option, so a Server that does not use this package pays
// nothing for it:
//
//	stats := rpcdebug.New()
//	srv := dispatch.NewServer(stats.Option())
//	http.Handle("/debug/rpc", stats.Handler(srv))
//
// A program that calls services as a Client of their replicas
// (dispatch.WithResolver) can show them on the same page (ShowReplicas):
// each replica in or out, until when and why.
//
// The page is plain HTML (a table, no scripts); ask for text/plain in the
// Accept header, or add ?format=text, for a text table. A method of raw
// bodies whose registration said what they hold (a gRPC method registered
// through grpczerodial) is shown with it: its protobuf messages and its
// gRPC name, under its name on the page, and in a table of its own below
// the figures in text (MethodStats.Bodies).
package rpcdebug
