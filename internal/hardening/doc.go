// Package hardening holds the whole-stack fault, partition and load tests of
// issue 10 ("Prove it"): they drive the public API of dispatch over every
// transport — memory, tcp, mux and the in-process shortcut in copy and
// direct mode — the way a deployment would, and check what the library
// promises when things go wrong.
//
//   - TestServerKilledInFlight: a server dies under 100 calls in flight, on
//     each of the five paths, on tcp and mux over a unix socket, and over
//     shared memory (over tcp, mux and shm it runs in a child process,
//     killed with SIGKILL); every call fails with ErrShutdown, saying why,
//     within a second (5 s are allowed, for a loaded machine), and the same
//     Client works again once the server is back (over a unix socket, on the
//     path the dead one's file was left at).
//   - TestPartition: a server in a network namespace is cut off by taking
//     its link down; calls end at their deadlines, and succeed again after
//     the link comes back, without a new Client. It needs root and iproute2
//     and is skipped otherwise.
//   - TestLoad: 64 clients over tcp and over mux make calls with random
//     bodies of 16 B to 64 KiB; no reply is lost, duplicated or mismatched,
//     and goroutines, file descriptors and heap return to where they were.
//     -load runs the full size (10,000 calls a client).
//   - TestMisbehavingPeerCost: what one hostile peer (silent, stalled,
//     sending half a frame or bad frames, never reading, flooding streams
//     or headers) pins on a default server over tcp and mux, each over
//     loopback TCP and a unix socket (goroutines, heap, file descriptors);
//     -cost prints the table.
//
// The package holds only tests; this file exists for its documentation.
package hardening
