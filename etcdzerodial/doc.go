// Package etcdzerodial registers zerodial servers in etcd and finds them
// there: the server side puts its address under a lease that it keeps
// alive, and the client side is a resolver.Resolver that follows the
// addresses of a service, for a dispatch Client over all of them
// (dispatch.WithResolver).
//
//	// Server: after srv.Start(l), register; srv's Shutdown or Close withdraws.
//	reg, err := etcdzerodial.Register(ctx, cli, srv, "Arith", "10.0.0.7:7000")
//
//	// Client: calls go to the servers of "Arith", as they come and go.
//	c, err := dispatch.Dial(ctx, tcp.New(), "Arith",
//		dispatch.WithResolver(etcdzerodial.NewResolver(cli)))
//
// cli is a go.etcd.io/etcd/client/v3 Client, made and closed by the caller.
//
// # Keys
//
// A server of the service S at the address A is the key
// <prefix>/S/A, whose value is A; the prefix is DefaultPrefix
// ("/zerodial/services") unless WithPrefix gives another, the same on both
// sides. A service's name is not empty and holds no '/'. Anything that puts
// keys of that shape (etcdctl, another language's registrar) registers
// servers the Resolver finds; a key whose value is empty stands for the
// address that ends it.
//
// # Leases
//
// Each Registration's key is bound to a lease of its own, of WithTTL's time
// to live (DefaultTTL, 10 s), which the Registration keeps alive
// (clientv3's KeepAlive) for as long as the process lives. The key goes:
//
//   - when the Server's Shutdown or Close begins (Register hands
//     Registration.Close to dispatch.Server.RegisterOnShutdown), so that
//     callers stop choosing the server before it stops answering; Shutdown
//     returns only once the key is gone (bounded by its ctx), so a process
//     may exit then, while Close does not wait for it;
//   - when Registration.Close is called: it revokes the lease;
//   - when the process dies, or its etcd client is closed: the lease expires
//     a TTL after its last keep-alive, and etcd deletes the key.
//
// A Registration that loses its lease — etcd unreachable for longer than
// the TTL, or restarted without it — puts its key again under a new lease
// once etcd answers, retrying with backoff meanwhile; WithLogger tells of
// it. How soon etcd answers after an outage is the etcd client's to say:
// gRPC's default backoff between attempts to reconnect grows to 2 minutes,
// which clientv3.Config's DialOptions can shorten (grpc.WithConnectParams).
//
// # Resolving
//
// A Resolver's Watch reads the service's keys, reports their addresses,
// and watches the keys from the revision it read, reporting the whole set
// (sorted) each time it changes. A watch that etcd ends — its revision
// compacted, the member without a leader — is made again after a fresh
// read, so nothing is missed; Refresh reads again at once. A service with
// no server is reported as an error wrapping resolver.ErrNoAddresses, upon
// which a dispatch Client keeps the set it had. The Resolver's target is
// the service's name; in a resolver.Schemes under "etcd", the target
// "etcd:///Arith" names the service "Arith".
package etcdzerodial
