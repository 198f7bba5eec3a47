// Package shm is a Transport between processes of one host over shared
// memory: the distance between memory's (one process) and tcp's (another
// machine), where plugins, sidecars and local daemons live.
//
// Two ends meet over a unix socket ("unix:PATH", or "unix:@name" in
// Linux's abstract namespace, as the tcp and mux transports take it:
// docs/unix.md). The dialler makes the shared memory (a memfd, which has
// no name and cannot be left behind) and passes it with SCM_RIGHTS; each
// direction is a ring in it (ring.go holds its layout). A message is
// written once into the ring by Send, and copied out once by Recv into the
// Message's body; messages larger than the ring go through in parts. An
// end waiting for the other spins for a budget it learns from its own
// waits (20 to 200 µs: spin.go), then sleeps on its end of a
// unix socketpair the Go runtime's netpoller watches (the other end
// passed to the peer, which sends a byte to wake it), and is woken only
// when it sleeps: a busy connection costs no system call per message.
//
// The unix socket stays open for the connection's life: when the peer
// closes, or its process ends, every Send and Recv waiting ends (Recv with
// io.EOF once what was sent is read), and the memory is freed once both
// ends have closed. The peer is not trusted: every position and length
// read from the shared memory is checked before use, nothing is allocated
// past the frame limit, the memfd's size is sealed, the end this end
// sleeps on is never passed, and every wake-up it sends is MSG_DONTWAIT,
// so that a broken or hostile peer cannot make this end read out of
// bounds, allocate without limit, fault, or block past its deadlines.
//
// Sockets are transport.FrameWaiters, as memory's and tcp's are, and
// transport.PeerCredReporters: the peer's uid, gid and pid, which the
// kernel reports for the unix socket, reach a handler's dispatch.CallInfo.
//
// Shared memory needs Linux (memfd, SCM_RIGHTS). Elsewhere Dial and Listen
// fail and say so; the tcp and mux transports over a unix socket serve the
// same host there. docs/shm.md says what it costs.
package shm
