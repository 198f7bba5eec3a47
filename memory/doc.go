// Package memory is a Transport whose sockets are channels inside one
// process: the network path without a network. Messages are copied on Send,
// limits and deadlines apply, and every error is the one a network transport
// gives, so a program tested over memory behaves the same over tcp or mux.
// Its sockets are transport.FrameWaiters, as tcp's are, so a dispatch call
// made alone runs on two goroutines, the caller's and the one that read it.
//
// Each Transport made by New is an address space of its own: two Transports
// never see each other's listeners, and there is no package-level state.
// Transport.Close closes the sockets the Transport dialled and fails its
// later Dials with transport.ErrClosed, as tcp's and mux's do; its
// listeners serve on, though only its own Dial, now over, could reach them.
//
// New takes this package's options, of type Option: WithMaxFrameSize and
// WithLogger, named as the tcp and mux packages name theirs. There is no
// WithTLS, since there is no wire to protect, and the network transports'
// options do not compile here. A Transport made with invalid options fails
// every Dial and Listen with one error that names each of them and its
// value.
package memory
