package faultnet_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/faultnet"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/transporttest"
)

// Each fault, measured in a testing/synctest bubble over memory, where
// the time it adds is exact.

// pair returns a Net of seed wrapping a memory Transport for host
// "client", and the two ends of a connection from it to "server".
func pair(t *testing.T, seed uint64, rules ...faultnet.Rule) (*faultnet.Net, transport.Socket, transport.Socket) {
	t.Helper()
	n := faultnet.New(seed)
	for _, r := range rules {
		n.Add(r)
	}
	tr := n.Wrap(memory.New(), "client")
	t.Cleanup(func() { tr.Close() })
	c, s := transporttest.Pair(t, tr, "server")
	return n, c, s
}

func msg(i int) *transport.Message {
	return &transport.Message{Header: map[string]string{"n": strconv.Itoa(i)}, Body: []byte("body")}
}

// recvAt receives a frame on s and returns its number and when it came,
// since start.
func recvAt(t *testing.T, s transport.Socket, start time.Time) (int, time.Duration) {
	t.Helper()
	var m transport.Message
	require.NoError(t, s.Recv(&m))
	n, err := strconv.Atoi(m.Header["n"])
	require.NoError(t, err)
	return n, time.Since(start)
}

func requireReset(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, syscall.ECONNRESET)
	var ne interface{ Timeout() bool }
	require.ErrorAs(t, err, &ne, "a net.Error")
}

// TestLatency: 100 ms of latency adds exactly 100 ms of the bubble's time
// to each hop: a frame sent arrives 100 ms later, its echo 200 ms after
// it was sent; frames sent together arrive together; a rule of one way
// leaves the other alone.
func TestLatency(t *testing.T) {
	for _, dir := range []faultnet.Direction{faultnet.Both, faultnet.ToListener, faultnet.ToDialler} {
		t.Run(dir.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, c, s := pair(t, 1, faultnet.Rule{Dir: dir, Latency: 100 * time.Millisecond})
				up, down := 100*time.Millisecond, 100*time.Millisecond
				switch dir {
				case faultnet.ToListener:
					down = 0
				case faultnet.ToDialler:
					up = 0
				}
				start := time.Now()
				for i := range 3 {
					require.NoError(t, c.Send(msg(i)))
				}
				for i := range 3 {
					n, at := recvAt(t, s, start)
					assert.Equal(t, i, n)
					assert.Equal(t, up, at, "frame %d to the listener", i)
					require.NoError(t, s.Send(msg(i)))
				}
				for i := range 3 {
					n, at := recvAt(t, c, start)
					assert.Equal(t, i, n)
					assert.Equal(t, up+down, at, "frame %d back", i)
				}
			})
		})
	}
}

// TestJitter: a delay drawn from [Latency, Latency+Jitter) for each
// frame; the frames keep their order, one drawn shorter waiting for the
// one before it; the same seed draws the same delays.
func TestJitter(t *testing.T) {
	arrivals := func(seed uint64) []time.Duration {
		var at []time.Duration
		synctest.Test(t, func(t *testing.T) {
			_, c, s := pair(t, seed, faultnet.Rule{Latency: 10 * time.Millisecond, Jitter: 50 * time.Millisecond})
			start := time.Now()
			for i := range 20 {
				require.NoError(t, c.Send(msg(i)))
			}
			var last time.Duration
			for i := range 20 {
				n, d := recvAt(t, s, start)
				require.Equal(t, i, n, "order")
				require.GreaterOrEqual(t, d, 10*time.Millisecond)
				require.Less(t, d, 60*time.Millisecond)
				require.GreaterOrEqual(t, d, last)
				last = d
				at = append(at, d)
			}
		})
		return at
	}
	a := arrivals(7)
	assert.Equal(t, a, arrivals(7), "the same seed")
	assert.NotEqual(t, a, arrivals(8), "another seed")
	assert.Greater(t, a[19], a[0], "the delays were drawn")
}

// TestCutAfterFrames: a cut after 5 frames lets exactly 5 through; the
// sixth resets the connection: the listener's end sees the end after the
// five, the dialler's Send and Recv fail with a connection reset.
func TestCutAfterFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, c, s := pair(t, 1, faultnet.Rule{Dir: faultnet.ToListener, CutAfterFrames: 5})
		for i := range 5 {
			require.NoError(t, c.Send(msg(i)))
		}
		require.NoError(t, c.Send(msg(5)), "the frame that cuts is sent, as on a network")
		for i := range 5 {
			got, _ := recvAt(t, s, time.Now())
			assert.Equal(t, i, got)
		}
		require.ErrorIs(t, s.Recv(&transport.Message{}), io.EOF)
		requireReset(t, c.Send(msg(6)))
		requireReset(t, c.Recv(&transport.Message{}))
		require.NoError(t, c.Close())
		require.ErrorIs(t, c.Recv(&transport.Message{}), transport.ErrClosed, "closed after the reset")
		ev := n.Events()
		require.Len(t, ev, 1)
		assert.Equal(t, faultnet.Cut, ev[0].Kind)
		assert.Equal(t, 6, ev[0].Frame)
		assert.Equal(t, "client→server#1", ev[0].Conn)
	})
}

// TestCutAfterBytes: a cut after 100 bytes lets through the frames whose
// bytes (header block and body) add up to no more than 100.
func TestCutAfterBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, s := pair(t, 1, faultnet.Rule{CutAfterBytes: 100})
		body := make([]byte, 30) // 30 bytes a frame, no header
		for range 4 {
			require.NoError(t, c.Send(&transport.Message{Body: body}))
		}
		var m transport.Message
		for range 3 {
			require.NoError(t, s.Recv(&m))
		}
		require.ErrorIs(t, s.Recv(&m), io.EOF)
		requireReset(t, c.Recv(&m))
	})
}

// TestLoss: each frame is lost with the chance Loss gives, and the log
// names those lost; the rest arrive, in order. Loss 1 loses them all.
func TestLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, c, s := pair(t, 3, faultnet.Rule{Dir: faultnet.ToListener, Loss: 0.3})
		for i := range 150 {
			require.NoError(t, c.Send(msg(i)))
		}
		lost := map[int]bool{}
		for _, e := range n.Events() {
			require.Equal(t, faultnet.Lost, e.Kind)
			lost[e.Frame-1] = true
		}
		assert.InDelta(t, 45, len(lost), 20, "frames lost of 150 at 0.3")
		for i := range 150 {
			if lost[i] {
				continue
			}
			got, _ := recvAt(t, s, time.Now())
			require.Equal(t, i, got)
		}
		require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Hour)))
		assert.ErrorIs(t, s.Recv(&transport.Message{}), transport.ErrTimeout, "nothing more came")
	})
	synctest.Test(t, func(t *testing.T) {
		_, c, s := pair(t, 3, faultnet.Rule{Loss: 1})
		require.NoError(t, c.Send(msg(0)))
		require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Hour)))
		assert.ErrorIs(t, s.Recv(&transport.Message{}), transport.ErrTimeout)
	})
}

// TestDuplicate: a request or response (Service-Method and Seq, no
// Stream) is delivered twice; a stream's frame never is.
func TestDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, c, s := pair(t, 1, faultnet.Rule{Duplicate: 1})
		req := &transport.Message{Header: map[string]string{"Service-Method": "A.B", "Seq": "1"}}
		open := &transport.Message{Header: map[string]string{"Service-Method": "A.S", "Seq": "2", "Stream": "open"}}
		smsg := &transport.Message{Header: map[string]string{"Seq": "2", "Stream": "msg"}}
		for _, m := range []*transport.Message{req, open, smsg} {
			require.NoError(t, c.Send(m))
		}
		var got []string
		var m transport.Message
		for range 4 {
			require.NoError(t, s.Recv(&m))
			got = append(got, m.Header["Seq"]+m.Header["Stream"])
		}
		assert.Equal(t, []string{"1", "1", "2open", "2msg"}, got)
		require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Hour)))
		assert.ErrorIs(t, s.Recv(&m), transport.ErrTimeout, "nothing more came")
		ev := n.Events()
		require.Len(t, ev, 1)
		assert.Equal(t, faultnet.Duplicated, ev[0].Kind)
		assert.Equal(t, "A.B", ev[0].Method)
	})
}

// TestDialFaults: a refused dial fails at once with the error of a host
// with no listener; a hanging one returns at its context's end, exactly,
// with its error.
func TestDialFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := faultnet.New(1)
		inner := memory.New()
		l, err := inner.Listen("server")
		require.NoError(t, err)
		defer l.Close()
		tr := n.Wrap(inner, "client")
		defer tr.Close()
		remove := n.Add(faultnet.Rule{Addr: "server", Refuse: 1})
		start := time.Now()
		_, err = tr.Dial(context.Background(), "server")
		require.ErrorIs(t, err, transport.ErrConnectionRefused)
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.Zero(t, time.Since(start))
		remove()

		remove = n.Add(faultnet.Rule{Addr: "server", Hang: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = tr.Dial(ctx, "server")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, time.Since(start))
		remove()

		c, err := tr.Dial(context.Background(), "server")
		require.NoError(t, err, "the rules removed")
		c.Close()
		var kinds []faultnet.Kind
		for _, e := range n.Events() {
			kinds = append(kinds, e.Kind)
		}
		assert.Equal(t, []faultnet.Kind{faultnet.Refused, faultnet.Hung}, kinds)
	})
}

// TestPartition: a partition of 30 s between the client and the server
// holds a frame sent across it until exactly its heal, and a dial across
// it too, while a host outside it is not held; one that refuses refuses
// dials; one that resets ends the connections across it as it begins.
func TestPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, c, s := pair(t, 1)
		other := n.Wrap(memory.New(), "other")
		defer other.Close()
		start := time.Now()
		time.Sleep(time.Second)
		n.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"server"}, For: 30 * time.Second})
		require.NoError(t, c.Send(msg(0)))
		_, at := recvAt(t, s, start)
		assert.Equal(t, 31*time.Second, at, "the frame arrived at the heal")
		require.NoError(t, s.Send(msg(1)))
		_, at = recvAt(t, c, start)
		assert.Equal(t, 31*time.Second, at, "healed: at once")
	})
	synctest.Test(t, func(t *testing.T) {
		n := faultnet.New(1)
		inner := memory.New()
		l, err := inner.Listen("server")
		require.NoError(t, err)
		defer l.Close()
		tr := n.Wrap(inner, "client")
		defer tr.Close()
		other := n.Wrap(inner, "other")
		defer other.Close()
		start := time.Now()
		n.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"server"}, For: 30 * time.Second})
		o, err := other.Dial(context.Background(), "server")
		require.NoError(t, err)
		o.Close()
		assert.Zero(t, time.Since(start), "a host outside the partition")
		c, err := tr.Dial(context.Background(), "server")
		require.NoError(t, err)
		c.Close()
		assert.Equal(t, 30*time.Second, time.Since(start), "a dial across it completed at the heal")

		n.Partition(faultnet.Partition{A: []string{"client"}, B: []string{"server"}, For: time.Minute, Refuse: true})
		_, err = tr.Dial(context.Background(), "server")
		require.ErrorIs(t, err, transport.ErrConnectionRefused)
	})
	synctest.Test(t, func(t *testing.T) {
		n, c, s := pair(t, 1)
		n.Partition(faultnet.Partition{A: []string{"server"}, B: []string{"client"}, Reset: true})
		requireReset(t, c.Recv(&transport.Message{}))
		require.ErrorIs(t, s.Recv(&transport.Message{}), io.EOF)
		ev := n.Events()
		require.Len(t, ev, 1)
		assert.Equal(t, faultnet.PartitionReset, ev[0].Kind)
	})
}

// TestSlowReader: a reader that takes 10 ms over each frame gets ten
// frames sent at once 10 ms apart, exactly; and, with the queues full,
// the sender is held back: a write deadline ends its Send.
func TestSlowReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, s := pair(t, 1, faultnet.Rule{Dir: faultnet.ToDialler, SlowReader: 10 * time.Millisecond})
		start := time.Now()
		for i := range 10 {
			require.NoError(t, s.Send(msg(i)))
		}
		for i := range 10 {
			n, at := recvAt(t, c, start)
			assert.Equal(t, i, n)
			assert.Equal(t, time.Duration(i+1)*10*time.Millisecond, at)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		_, c, _ := pair(t, 1, faultnet.Rule{Dir: faultnet.ToListener, SlowReader: time.Hour})
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Minute)))
		var err error
		sent := 0
		for err == nil {
			if err = c.Send(msg(sent)); err == nil {
				sent++
			}
		}
		assert.ErrorIs(t, err, transport.ErrTimeout)
		assert.Less(t, sent, 1000, "the sender was held back")
	})
}

// TestBandwidth: at 1,000 bytes a second, a frame of 100 bytes holds the
// link for 100 ms: five sent at once arrive 100 ms apart.
func TestBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, s := pair(t, 1, faultnet.Rule{Bandwidth: 1000})
		start := time.Now()
		for range 5 {
			require.NoError(t, c.Send(&transport.Message{Body: make([]byte, 100)}))
		}
		var m transport.Message
		for i := range 5 {
			require.NoError(t, s.Recv(&m))
			assert.Equal(t, time.Duration(i+1)*100*time.Millisecond, time.Since(start))
		}
	})
}

// TestReplay: two runs of one workload with one seed — loss, jitter,
// duplication and a cut drawn on many connections — give identical
// event logs; another seed another.
func TestReplay(t *testing.T) {
	run := func(seed uint64) []string {
		var log []string
		synctest.Test(t, func(t *testing.T) {
			n := faultnet.New(seed)
			n.Add(faultnet.Rule{Jitter: 20 * time.Millisecond, Loss: 0.1, Duplicate: 0.2})
			n.Add(faultnet.Rule{Dir: faultnet.ToDialler, CutAfterFrames: 15})
			n.Add(faultnet.Rule{Refuse: 0.2})
			inner := memory.New()
			l, err := inner.Listen("server")
			require.NoError(t, err)
			transporttest.ServeEcho(t, l)
			tr := n.Wrap(inner, "client")
			defer tr.Close()
			for conn := range 10 {
				c, err := tr.Dial(context.Background(), "server")
				if err != nil {
					continue
				}
				for i := range 20 {
					m := &transport.Message{Header: map[string]string{"Service-Method": "A.B", "Seq": fmt.Sprint(conn*100 + i)}}
					if c.Send(m) != nil {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(time.Second)
				c.Close()
			}
			for _, e := range n.Events() {
				log = append(log, e.String())
			}
		})
		return log
	}
	a := run(42)
	require.NotEmpty(t, a)
	assert.Equal(t, a, run(42), "replayed")
	assert.NotEqual(t, a, run(43), "another seed")
	t.Logf("%d events, the first: %v", len(a), a[:min(5, len(a))])
}

// TestSeedReplays: TestSeed takes the seed from the environment.
func TestSeedReplays(t *testing.T) {
	t.Setenv(faultnet.SeedEnv, "12345")
	assert.Equal(t, uint64(12345), faultnet.TestSeed(t))
}

// TestCloseDelivers: frames sent before Close go on to the peer at their
// time, as a network socket's buffers do, and the peer then sees the
// end; the Transport's Close drops what a socket still holds at once.
func TestCloseDelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, s := pair(t, 1, faultnet.Rule{Latency: time.Second})
		start := time.Now()
		for i := range 3 {
			require.NoError(t, c.Send(msg(i)))
		}
		require.NoError(t, c.Close())
		require.ErrorIs(t, c.Send(msg(3)), transport.ErrClosed)
		for i := range 3 {
			n, at := recvAt(t, s, start)
			assert.Equal(t, i, n)
			assert.Equal(t, time.Second, at)
		}
		require.ErrorIs(t, s.Recv(&transport.Message{}), io.EOF)
	})
	synctest.Test(t, func(t *testing.T) {
		n := faultnet.New(1)
		n.Add(faultnet.Rule{Latency: time.Second})
		inner := memory.New()
		tr := n.Wrap(inner, "client")
		c, s := transporttest.Pair(t, tr, "server")
		require.NoError(t, c.Send(msg(0)))
		require.NoError(t, c.Close())
		start := time.Now()
		require.NoError(t, tr.Close())
		require.ErrorIs(t, s.Recv(&transport.Message{}), io.EOF)
		assert.Zero(t, time.Since(start), "the end seen at once, the frame dropped")
		_, err := tr.Dial(context.Background(), "server")
		require.ErrorIs(t, err, transport.ErrClosed)
	})
}

// TestReset: Net.Reset resets the connections between two sets now, and
// no other; later dials go ahead.
func TestReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := faultnet.New(1)
		inner := memory.New()
		a := n.Wrap(inner, "a")
		defer a.Close()
		b := n.Wrap(inner, "b")
		defer b.Close()
		ac, as := transporttest.Pair(t, a, "server")
		bc, _ := transporttest.Pair(t, b, "server")
		n.Reset([]string{"a"}, []string{"server"})
		requireReset(t, ac.Send(msg(0)))
		require.ErrorIs(t, as.Recv(&transport.Message{}), io.EOF)
		require.NoError(t, bc.Send(msg(0)), "b's connection is not reset")
		c2, s2 := transporttest.Pair(t, a, "server2")
		require.NoError(t, c2.Send(msg(1)))
		got, _ := recvAt(t, s2, time.Now())
		assert.Equal(t, 1, got)
		ev := n.Events()
		require.Len(t, ev, 1)
		assert.Equal(t, faultnet.Reset, ev[0].Kind)
		assert.Equal(t, "a→server#1", ev[0].Conn)
	})
}
