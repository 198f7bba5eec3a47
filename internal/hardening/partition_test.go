package hardening

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// TestPartition cuts the network between a Client and its server, a child
// process in a network namespace of its own joined to this one by a veth
// pair, by taking the server's end of the link down; and heals it by
// bringing it up. While partitioned, calls with a deadline end at it, with
// an error matching context.DeadlineExceeded. After the heal the same Client
// works again.
//
// Nothing on either end notices a partition this short: dispatch has no
// keepalive of its own, the tcp protocol none (the kernel's keepalive
// probes, which Go turns on, start after 15 s of silence), and mux pings
// every 30 s. A call whose deadline passes abandons its sequence number but
// not the connection. So the Client goes on using the same connection, and
// TCP, which retransmits what the partition dropped, delivers again once
// the link is back, when its retransmission timer next fires (backed off by
// the partition's length to a second or so at most). The test asserts
// recovery within 15 s of the heal, and logs how long it took and how many
// connections the Client dialled.
//
// It needs root and iproute2 ("ip"), and is skipped without them.
func TestPartition(t *testing.T) {
	n := newNetns(t)
	for _, kind := range []string{"tcp", "mux"} {
		t.Run(kind, func(t *testing.T) { partition(t, n, kind) })
	}
}

func partition(t *testing.T, n *netns, kind string) {
	ch := startChild(t, kind, netip.AddrPortFrom(n.peerAddr, 0).String(), "ip", "netns", "exec", n.name)
	tr := &countingTransport{Transport: newTransport(t, kind)}
	c := dial(t, tr, ch.addr)
	body := []byte("across the veth")
	if err := echo(context.Background(), c, 0, body); err != nil {
		t.Fatalf("before the partition: %v", err)
	}

	n.ip(t, "netns", "exec", n.name, "ip", "link", "set", n.peerDev, "down")
	healed := false
	heal := func() {
		if !healed {
			healed = true
			n.ip(t, "netns", "exec", n.name, "ip", "link", "set", n.peerDev, "up")
		}
	}
	defer heal() // so that a failure leaves the child reachable for its clean-up

	// While partitioned: calls end at their deadline, with a deadline
	// error, neither sooner nor much later — a few at once, then one more
	// on the connection they left behind.
	// The margin tells a call that ended at its deadline from one that
	// waited for the network (TCP's retransmissions: minutes); 300 ms, as
	// it was, a loaded machine need not keep.
	const deadline = 400 * time.Millisecond
	const margin = 5 * time.Second
	var seq atomic.Uint64
	partitioned := func(round string, calls int) {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				start := time.Now() // before the deadline is set: it cannot pass earlier
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				err := echo(ctx, c, seq.Add(1), body)
				took := time.Since(start)
				var de *dispatch.Error
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &de) || de.Code != dispatch.CodeDeadlineExceeded {
					t.Errorf("%s: a call with a %v deadline across the partition returned %v (%s); want a *dispatch.Error with CodeDeadlineExceeded",
						round, deadline, err, errKind(err))
				}
				if took < deadline || took > deadline+margin {
					t.Errorf("%s: a call with a %v deadline across the partition returned after %v; want within [%v, %v]",
						round, deadline, took, deadline, deadline+margin)
				}
			})
		}
		wg.Wait()
	}
	partitioned("concurrent", 8)
	partitioned("after them", 1)
	if t.Failed() {
		return
	}

	heal()
	healedAt := time.Now()
	var attempts []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := echo(ctx, c, seq.Add(1), body)
		cancel()
		if err == nil {
			break
		}
		attempts = append(attempts, errKind(err))
		if time.Since(healedAt) > 15*time.Second {
			t.Fatalf("no call succeeded within 15 s of the heal (%d attempts: %v)", len(attempts), attempts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the first call succeeded %v after the heal, after %d failed attempts %v; the Client dialled %d connection(s) in all",
		time.Since(healedAt).Round(time.Millisecond), len(attempts), attempts, tr.dials.Load())
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := echo(ctx, c, seq.Add(1), body)
		cancel()
		if err != nil {
			t.Fatalf("call %d after recovery: %v", i, err)
		}
	}
}

// netns is a network namespace joined to this one by a veth pair.
type netns struct {
	name     string
	hostDev  string     // the veth end in this namespace
	peerDev  string     // the end in name
	peerAddr netip.Addr // peerDev's address
}

var netnsCount atomic.Int32

// newNetns makes a namespace and a veth pair, both removed when the test
// ends, whatever its outcome; or skips the test where that is not possible.
// Names carry the pid (and a count, for -count), so concurrent runs do not
// collide; addresses come from 198.18.0.0/15, the range set aside for
// network tests (RFC 2544), a /30 per pid and count.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip to create network namespaces")
	}
	pid, k := os.Getpid(), int(netnsCount.Add(1))
	base := fmt.Sprintf("zdh%d%c", pid%10000000, 'a'+rune(k%26))
	n := &netns{name: base, hostDev: base + "h", peerDev: base + "p"}
	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		// Deleting one end deletes both, at once; a namespace goes away
		// in the background once nothing holds it.
		_ = exec.Command("ip", "link", "del", n.hostDev).Run()
		if out, err := exec.Command("ip", "netns", "del", n.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.name, err, out)
		}
	})
	slot := uint32((pid*26+k)%(1<<15)) * 4
	addr := func(host uint32) netip.Addr {
		v := 198<<24 | 18<<16 + slot + host
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	hostAddr := addr(1)
	n.peerAddr = addr(2)
	n.ip(t, "link", "add", n.hostDev, "type", "veth", "peer", "name", n.peerDev)
	n.ip(t, "link", "set", n.peerDev, "netns", n.name)
	n.ip(t, "addr", "add", hostAddr.String()+"/30", "dev", n.hostDev)
	n.ip(t, "link", "set", n.hostDev, "up")
	n.ip(t, "netns", "exec", n.name, "ip", "addr", "add", n.peerAddr.String()+"/30", "dev", n.peerDev)
	n.ip(t, "netns", "exec", n.name, "ip", "link", "set", n.peerDev, "up")
	n.ip(t, "netns", "exec", n.name, "ip", "link", "set", "lo", "up")
	return n
}

// ip runs ip with args, failing the test if it fails.
func (n *netns) ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}
