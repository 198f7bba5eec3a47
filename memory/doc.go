// Package memory is a Transport whose sockets are channels inside one
// process: the network path without a network. Messages are copied on Send,
// limits and deadlines apply, and every error is the one a network transport
// gives, so a program tested over memory behaves the same over tcp or mux.
//
// Each Transport made by New is an address space of its own: two Transports
// never see each other's listeners, and there is no package-level state.
package memory
