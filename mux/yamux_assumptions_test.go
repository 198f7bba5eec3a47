package mux

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
)

// recordingConn passes writes through and keeps a copy of each.
type recordingConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (r *recordingConn) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, append([]byte(nil), b...))
	r.mu.Unlock()
	return r.Conn.Write(b)
}

func (r *recordingConn) recorded() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.writes...)
}

// TestYamuxAssumptions pins what mux relies on in yamux's behaviour rather
// than in its documented API, so that an upgrade that changes it fails here,
// by name, rather than somewhere obscure:
//
//  1. tapConn joins a data frame's header to its body (track.go): it
//     assumes yamux writes every frame header as one 12-byte Write, and a
//     data frame's body as the very next Write on the connection.
//  2. The tracker reads stream state from the flags of frame headers
//     (version 0, SYN on a stream's first frame, FIN when it is closed), as
//     yamux's spec.md describes.
func TestYamuxAssumptions(t *testing.T) {
	a, b := net.Pipe()
	rec := &recordingConn{Conn: a}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.EnableKeepAlive = false
	client, err := yamux.Client(rec, cfg)
	require.NoError(t, err)
	server, err := yamux.Server(b, cfg.Clone())
	require.NoError(t, err)
	defer server.Close()
	defer client.Close()

	accepted := make(chan error, 1)
	go func() {
		s, err := server.AcceptStream()
		if err == nil {
			_, err = io.Copy(io.Discard, s)
			s.Close()
		}
		accepted <- err
	}()
	st, err := client.OpenStream()
	require.NoError(t, err)
	for _, msg := range []string{"hello", "a longer message, in a second frame"} {
		_, err = st.Write([]byte(msg))
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	select {
	case err := <-accepted:
		require.NoError(t, err)
	case <-time.After(waitLong):
		t.Fatal("the server never saw the stream end")
	}

	writes := rec.recorded()
	var sawSYN, sawFIN, sawData bool
	for i := 0; i < len(writes); i++ {
		w := writes[i]
		if len(w) != hdrLen {
			t.Fatalf("yamux wrote %d bytes where a 12-byte frame header was expected (write %d of %d): "+
				"mux's tapConn assumes each header is one Write of its own; recheck track.go before this yamux version", len(w), i, len(writes))
		}
		if w[0] != protoVersion {
			t.Fatalf("yamux frame version %d, not %d: mux's tracker reads version-0 headers (track.go)", w[0], protoVersion)
		}
		flags := binary.BigEndian.Uint16(w[2:4])
		sawSYN = sawSYN || flags&flagSYN != 0
		sawFIN = sawFIN || flags&flagFIN != 0
		if w[1] == typeData {
			if n := binary.BigEndian.Uint32(w[8:12]); n > 0 {
				sawData = true
				if i+1 >= len(writes) || uint32(len(writes[i+1])) != n {
					t.Fatalf("yamux did not write a data frame's %d-byte body as the next Write after its header: "+
						"mux's tapConn joins the two on that assumption (track.go)", n)
				}
				i++ // the body
			}
		}
	}
	require.True(t, sawData, "no data frame was written")
	require.True(t, sawSYN, "no frame carried SYN when the stream opened: mux's tracker relies on it (track.go)")
	require.True(t, sawFIN, "no frame carried FIN when the stream closed: mux's tracker relies on it (track.go)")
}

// endingConn is one end of a connection whose Read, once the connection
// has failed, returns the bytes of ending before io.EOF, as tapConn hands
// yamux its end frames.
type endingConn struct {
	net.Conn
	ending      []byte // set before the connection fails
	closeCalled atomic.Bool
}

func (c *endingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err == nil {
		return n, nil
	}
	if len(c.ending) > 0 {
		n = copy(b, c.ending)
		c.ending = c.ending[n:]
		return n, nil
	}
	return 0, io.EOF
}

func (c *endingConn) Close() error {
	c.closeCalled.Store(true)
	return c.Conn.Close()
}

// closedStream runs a yamux client over ec, opens a stream and closes it
// (which arms its close timer, an hour long), gives ec the peer's FIN for it
// as end frames if fin is set, closes the session, and returns weak
// pointers to the stream and the session.
func closedStream(t *testing.T, ec *endingConn, fin bool) (weak.Pointer[yamux.Stream], weak.Pointer[yamux.Session]) {
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	cfg.EnableKeepAlive = false
	cfg.StreamCloseTimeout = time.Hour
	sess, err := yamux.Client(ec, cfg)
	require.NoError(t, err)
	st, err := sess.OpenStream()
	require.NoError(t, err)
	require.NoError(t, st.Close())
	if fin {
		ec.ending = header(typeWindowUpd, flagFIN, st.StreamID(), 0)
	}
	require.NoError(t, sess.Close())
	require.True(t, ec.closeCalled.Load(), "yamux's Session.Close did not close the connection: "+
		"mux's tapConn.Close tells the tracker the session is over (track.go)")
	return weak.Make(st), weak.Make(sess)
}

// TestYamuxAssumptionsSessionEnd pins what mux relies on when a session
// ends (tracker.markDead, tracker.endFrames):
//
//  3. Session.Close closes the connection it runs over (so tapConn.Close
//     runs however the session ends).
//  4. A FIN received for a stream closed here stops the timer its Close
//     armed and frees it; frames the connection's Read returns before its
//     error are handled even when Session.Close has begun. With them a
//     closed session is freed at once, though Session.Close itself stops
//     no close timer (the control: without the FIN, the timer keeps the
//     stream and its session in memory).
func TestYamuxAssumptionsSessionEnd(t *testing.T) {
	freed := func(st weak.Pointer[yamux.Stream], sess weak.Pointer[yamux.Session]) bool {
		runtime.GC()
		return st.Value() == nil && sess.Value() == nil
	}
	t.Run("end frames free the session", func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		go io.Copy(io.Discard, b)
		st, sess := closedStream(t, &endingConn{Conn: a}, true)
		require.Eventually(t, func() bool { return freed(st, sess) }, waitLong, 10*time.Millisecond,
			"a closed yamux session stayed in memory though the peer's FIN for its closed stream came before the connection's end: "+
				"mux's tracker.endFrames relies on it (track.go)")
	})
	t.Run("control: the close timer keeps it", func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		go io.Copy(io.Discard, b)
		st, sess := closedStream(t, &endingConn{Conn: a}, false)
		time.Sleep(100 * time.Millisecond) // the session's goroutines end
		require.False(t, freed(st, sess),
			"yamux now frees a closed session whose closed stream had its close timer running: "+
				"tracker.endFrames may no longer be needed (track.go)")
	})
}
