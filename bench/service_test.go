package bench

// Args is the 16-byte request of Arith.Multiply.
type Args struct{ A, B int64 }

// Product is the reply of Arith.Multiply.
type Product struct{ P int64 }

// Payload is the request and reply of Arith.Echo.
type Payload struct{ Data []byte }

// Arith is the one service every implementation serves, in net/rpc shape.
// The reflection-registered zerodial paths, net/rpc, msgpackrpc and
// floor-reflect call these methods through reflection; the gRPC handlers,
// dispatch.Handle, floor-chan and floor-tcp call them directly (floor-tcp
// does the arithmetic on raw bytes).
type Arith struct{}

// Multiply writes A*B.
func (*Arith) Multiply(args *Args, reply *Product) error {
	reply.P = args.A * args.B
	return nil
}

// Echo returns the payload it was given.
func (*Arith) Echo(args *Payload, reply *Payload) error {
	reply.Data = args.Data
	return nil
}

// method names the call a benchmark makes; each implementation maps it to
// its own spelling ("Arith.Multiply", "/Arith/Multiply", ...).
type method int

const (
	multiply method = iota
	echo
)

// size is one row of BenchmarkUnary: n == 0 is the 16-byte Multiply, any
// other n an Echo of an n-byte payload.
type size struct {
	name string
	n    int
}

var (
	size16 = size{"16B", 0}
	sizes  = []size{size16, {"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}
)

// payload returns n deterministic, incompressible-looking bytes.
func payload(n int) []byte {
	p := make([]byte, n)
	x := uint32(2463534242)
	for i := range p {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		p[i] = byte(x)
	}
	return p
}
