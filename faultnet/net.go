package faultnet

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zerodial/transport"
)

// Net is a faulty network: the rules and partitions a test states, the
// seed every random choice is drawn from, and the log of the faults it
// injected. Its Transports (Wrap) carry every connection through it.
// Its methods may be called from many goroutines at once.
type Net struct {
	seed  uint64
	start time.Time

	mu      sync.Mutex
	rules   []*rule
	parts   []*partition
	dials   map[string]int // dials so far from one host to one address
	socks   map[*socket]struct{}
	events  []Event
	dropped int // events past maxEvents, not kept
}

// rule is a Rule added to a Net, with the number that names it in keys.
type rule struct {
	Rule
	id      int
	removed bool
}

// maxEvents bounds the log: a long randomized run keeps its first events,
// and counts the rest.
const maxEvents = 1 << 20

// New returns a Net with no faults whose random choices are all drawn from
// seed. Its clock starts now: inside a testing/synctest bubble, the
// bubble's.
func New(seed uint64) *Net {
	return &Net{seed: seed, start: time.Now(), dials: map[string]int{}, socks: map[*socket]struct{}{}}
}

// Seed returns the seed n draws from.
func (n *Net) Seed() uint64 { return n.seed }

// Add adds r to n's rules. It applies to the dials made and frames sent
// from now on, until remove is called.
func (n *Net) Add(r Rule) (remove func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	added := &rule{Rule: r, id: len(n.rules)}
	n.rules = append(n.rules, added)
	return func() {
		n.mu.Lock()
		added.removed = true
		n.mu.Unlock()
	}
}

// Partition begins p now. With p.Reset, the connections it crosses are
// reset before Partition returns.
func (n *Net) Partition(p Partition) {
	now := time.Now()
	q := &partition{Partition: p, a: set(p.A), b: set(p.B)}
	if p.For > 0 {
		q.until = now.Add(p.For)
	}
	n.mu.Lock()
	n.parts = append(n.parts, q)
	n.mu.Unlock()
	if p.Reset {
		n.reset(q, PartitionReset)
	}
}

// Reset resets, now, the connections between the names of a and those of
// b (hosts and dialled addresses), as a peer that restarted, or a router,
// would: the dialling ends' Send and Recv fail with a connection reset,
// the listening ends see the connection end. Later dials are not
// affected.
func (n *Net) Reset(a, b []string) {
	n.reset(&partition{a: set(a), b: set(b)}, Reset)
}

func (n *Net) reset(q *partition, k Kind) {
	n.mu.Lock()
	var cut []*socket
	for s := range n.socks {
		if q.crosses(s.host, s.addr) {
			cut = append(cut, s)
		}
	}
	n.mu.Unlock()
	slices.SortFunc(cut, func(a, b *socket) int { return compareConn(a.conn, b.conn) })
	for _, s := range cut {
		s.cut(k)
	}
}

// hold is what the partitions holding at a moment do to a connection.
type hold struct {
	holds  bool      // a partition holds it
	until  time.Time // when the last of them heals
	never  bool      // one of them never heals
	refuse bool      // one of them refuses its dials
}

// heldUntil returns what the partitions that hold at now do to a
// connection from host to addr.
func (n *Net) heldUntil(host, addr string, now time.Time) hold {
	n.mu.Lock()
	defer n.mu.Unlock()
	var h hold
	for _, q := range n.parts {
		if !q.holds(now) || !q.crosses(host, addr) {
			continue
		}
		h.holds = true
		h.refuse = h.refuse || q.Refuse
		if q.until.IsZero() {
			h.never = true
		} else if q.until.After(h.until) {
			h.until = q.until
		}
	}
	return h
}

// matching returns the rules that apply to a frame of dir and method on a
// connection from host to addr (dir Both: a dial), in the order added.
func (n *Net) matching(host, addr string, dir Direction, method string) []*rule {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*rule
	for _, r := range n.rules {
		if !r.removed && r.matches(host, addr, dir, method) {
			out = append(out, r)
		}
	}
	return out
}

// dialled numbers a new dial from host to addr and returns the name of its
// connection: "host→addr#n", the nth such dial.
func (n *Net) dialled(host, addr string) connID {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := host + "→" + addr
	n.dials[k]++
	return connID{host: host, addr: addr, n: n.dials[k]}
}

// draw returns a number in [0, 1) drawn from the seed for the choice the
// key names: a choice's draw depends on the seed and on what the choice
// is about alone (a connection, a way, a frame's number on it, a rule, a
// purpose), never on the order in which goroutines made other choices.
func (n *Net) draw(c connID, dir Direction, frame int, r *rule, purpose string) float64 {
	h := fnv.New64a()
	var b [8]byte
	h.Write([]byte(c.host))
	h.Write([]byte{0})
	h.Write([]byte(c.addr))
	for _, x := range []int{c.n, int(dir), frame, r.id} {
		binary.BigEndian.PutUint64(b[:], uint64(x))
		h.Write(b[:])
	}
	h.Write([]byte(purpose))
	return rand.New(rand.NewPCG(n.seed, h.Sum64())).Float64()
}

// record logs e, stamped with the time since n began.
func (n *Net) record(e Event) {
	e.At = time.Since(n.start)
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.events) >= maxEvents {
		n.dropped++
		return
	}
	n.events = append(n.events, e)
}

func (n *Net) track(s *socket) {
	n.mu.Lock()
	n.socks[s] = struct{}{}
	n.mu.Unlock()
}

func (n *Net) forget(s *socket) {
	n.mu.Lock()
	delete(n.socks, s)
	n.mu.Unlock()
}

// Events returns the faults n has injected so far, in a canonical order:
// by time, then by connection, way and frame. Inside a testing/synctest
// bubble, two runs of one test with one seed give equal logs, as long as
// the test makes its calls in the same order (calls made at once by
// goroutines at the same instant may take one another's frame numbers).
// A log longer than about a million events keeps the first and counts
// the rest (Dropped).
func (n *Net) Events() []Event {
	n.mu.Lock()
	out := slices.Clone(n.events)
	n.mu.Unlock()
	slices.SortStableFunc(out, compareEvents)
	return out
}

// Dropped returns how many events the log did not keep.
func (n *Net) Dropped() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped
}

// Wrap returns a Transport that dials over inner from host, a name of the
// test's choosing that rules and partitions refer to ("orders"), through
// n. Listen is inner's.
func (n *Net) Wrap(inner transport.Transport, host string) *Transport {
	return &Transport{n: n, inner: inner, host: host, done: make(chan struct{}), socks: map[*socket]struct{}{}}
}

// SeedEnv is the environment variable TestSeed reads a seed from.
const SeedEnv = "FAULTNET_SEED"

// TestSeed returns a seed for t: the one SeedEnv holds when it is set,
// else a random one. If t fails, it logs the seed and how to replay it.
func TestSeed(t testing.TB) uint64 {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("faultnet: %s=%q is not a seed: %v", SeedEnv, s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("faultnet: seed %d; replay with %s=%d go test -run '^%s$'", seed, SeedEnv, seed, t.Name())
		}
	})
	return seed
}

// connID names a connection: the nth dial from host to addr.
type connID struct {
	host, addr string
	n          int
}

func (c connID) String() string { return fmt.Sprintf("%s→%s#%d", c.host, c.addr, c.n) }

func compareConn(a, b connID) int {
	if a.host != b.host {
		return compareStr(a.host, b.host)
	}
	if a.addr != b.addr {
		return compareStr(a.addr, b.addr)
	}
	return a.n - b.n
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
