// Package resolver finds the replicas of a service: a Resolver turns a
// target (a name) into the set of addresses that serve it, and follows the
// set as it changes. A dispatch Client given one (dispatch.WithResolver)
// calls the replicas it reports, balancing between them.
//
// Three resolvers are here: Static (a fixed list), DNS (SRV or A/AAAA
// records, as Kubernetes headless Services and Consul DNS serve them) and
// Schemes, which picks one of those by the target's scheme
// ("dns:///svc.ns.svc.cluster.local:7000", "static:///a:1,b:2"). The etcd
// resolver, with its registration of servers under a lease, is a module of
// its own (github.com/zerodial/transport/etcdzerodial), so that this one
// keeps its small set of dependencies.
//
// The interface is small so that other registries (Consul's catalog, a
// file watched on disk) are a few dozen lines: report the whole set each
// time it changes, and stop when asked.
package resolver
