// Package dispatchtest is the conformance suite of dispatch's promise: one
// observable behaviour on every path a call can take. Every path of this
// repository runs it, and a path written elsewhere — a Transport of its
// own, a protocol reached by another client — is held to the same promise
// by calling Run from its tests, as golang.org/x/net/nettest.TestConn
// holds a net.Conn:
//
//	func TestConformance(t *testing.T) {
//		dispatchtest.Run(t, dispatchtest.Binding{
//			Profile: dispatchtest.Profile{Name: "mytransport"},
//			Serve: func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
//				tr := mytransport.New(l.Server, l.Client)
//				ln, _ := tr.Listen("127.0.0.1:0")
//				srv.Start(ln)
//				c, _ := dispatch.Dial(context.Background(), tr, ln.Addr().String())
//				t.Cleanup(func() { c.Close() })
//				return dispatchtest.ClientCaller(c)
//			},
//		})
//	}
//
// The package's example (example_binding_test.go) binds a Transport of
// one's own, whole; TestExampleBinding runs the suite on it.
//
// The suite owns the services and builds, for each case, the
// *dispatch.Server the case needs; a Binding says how to serve it on one
// path (Serve) and how to call it there (a Caller: unary calls with
// metadata both ways, a deadline through the context, streams of every
// shape). A path reached by a *dispatch.Client needs ClientCaller alone;
// another implements Caller over its own client.
//
// Each case runs on the reference path (zerodial's wire over tcp) and on
// the binding's, and the two outcomes (Outcome: the reply, the error's
// words, type and code, what the interceptors and the handler saw) must be
// the same. What a path cannot carry — metadata over a net/rpc codec, a
// deadline on the wire, streams — it declares in its Profile, as
// Differences: data, each saying how it changes the outcome of each case
// it affects. A declared difference never skips a case: the case still
// runs and asserts what the path does instead (a stream over a path with
// none is refused, with a clear error). A path that shows an outcome it
// does not declare fails the case, in a subtest named for the case and
// the path, with the outcome expected.
//
// The cases that wait on time run inside a testing/synctest bubble on a
// path that can hold one (Binding.Bubble: no real socket), where every
// duration is exact; elsewhere no case sleeps to synchronise, and none
// asserts how long something took.
//
// The paths of this repository declare their differences here (Profiles),
// and docs/conformance.md shows them as Table renders them: a row for each
// case, a column for each path.
package dispatchtest
