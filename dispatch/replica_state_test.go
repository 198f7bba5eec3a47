package dispatch_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/resolver"
)

// infoLog is a logger at Info whose records of replicas a test reads.
type infoLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *infoLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *infoLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

// replicaLines returns the records about replicas, without their errors.
func (l *infoLog) replicaLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.buf.String()) {
		if strings.Contains(line, `msg="dispatch: replica`) {
			out = append(out, errAttr.ReplaceAllString(strings.TrimSpace(line), ""))
		}
	}
	return out
}

var errAttr = regexp.MustCompile(` err=.*$`)

// echoServer serves Who.Echo, Who.Name (addr) and Who.Hold at addr on tr;
// Who.Hold signals held and waits for release.
func echoServer(t *testing.T, tr *memory.Transport, addr string, held chan<- struct{}, release <-chan struct{}) *dispatch.Server {
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Who.Echo", func(ctx context.Context, n *int, r *int) error { *r = *n; return nil }))
	require.NoError(t, dispatch.Handle(srv, "Who.Name", func(ctx context.Context, _ *int, name *string) error { *name = addr; return nil }))
	require.NoError(t, dispatch.Handle(srv, "Who.Hold", func(ctx context.Context, n *int, r *int) error {
		held <- struct{}{}
		<-release
		return nil
	}))
	l, err := tr.Listen(addr)
	require.NoError(t, err)
	require.NoError(t, srv.Start(l))
	t.Cleanup(func() { srv.Close() })
	return srv
}

// A Client of replicas tells the state of each (Replicas): in or out, until
// when and why, its calls in flight and its recent failures; ejections and
// readmissions are logged at Info.
func TestReplicasState(t *testing.T) {
	tr := memory.New()
	held, release := make(chan struct{}, 1), make(chan struct{})
	a := echoServer(t, tr, "a", held, release)
	var log infoLog
	c, err := dispatch.Dial(t.Context(), tr, "a,b", dispatch.WithResolver(resolver.Static{}),
		dispatch.WithEjection(1, time.Hour), dispatch.WithLogger(log.logger()), dispatch.WithIdempotent("Who.Echo"))
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, []dispatch.ReplicaState{{Addr: "a", In: true}, {Addr: "b", In: true}}, c.Replicas(), "before any call")

	// b is served by nobody: the calls its turn picks fail their dial,
	// and are made on a; its first failure ejects it, for an hour.
	before := time.Now()
	for i := range 4 {
		var r int
		require.NoError(t, c.Call(t.Context(), "Who.Echo", i, &r))
	}
	after := time.Now()
	st := c.Replicas()
	require.Len(t, st, 2)
	assert.Equal(t, dispatch.ReplicaState{Addr: "a", In: true}, st[0])
	b := st[1]
	assert.Equal(t, "b", b.Addr)
	assert.False(t, b.In)
	assert.WithinRange(t, b.Until, before.Add(time.Hour), after.Add(time.Hour))
	assert.ErrorContains(t, b.Why, "dispatch: dial memory b:")
	assert.Equal(t, b.Why, b.LastFailure)
	assert.Equal(t, 1, b.Ejections)
	assert.Zero(t, b.Failures, "counted afresh after the ejection")
	assert.Equal(t, []string{`level=INFO msg="dispatch: replica ejected" target=a,b replica=b for=1h0m0s`}, log.replicaLines())

	// A call in flight is counted on its replica.
	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "Who.Hold", 0, new(int)) }()
	recv(t, held, waitLong, "Who.Hold")
	assert.EqualValues(t, 1, c.Replicas()[0].InFlight)
	close(release)
	require.NoError(t, recv(t, done, waitLong, "Who.Hold's reply"))
	assert.Zero(t, c.Replicas()[0].InFlight)

	// b comes up and a goes: a's calls fail, and, no other replica being
	// left, are made on b, whose success readmits it.
	echoServer(t, tr, "b", make(chan struct{}, 1), nil)
	require.NoError(t, a.Close())
	for i := 0; len(log.replicaLines()) < 3 && i < 10; i++ {
		_ = c.Call(t.Context(), "Who.Echo", i, new(int))
	}
	assert.Equal(t, []string{
		`level=INFO msg="dispatch: replica ejected" target=a,b replica=b for=1h0m0s`,
		`level=INFO msg="dispatch: replica ejected" target=a,b replica=a for=1h0m0s`,
		`level=INFO msg="dispatch: replica readmitted: a call succeeded after its ejection" target=a,b replica=b`,
	}, log.replicaLines())
	st = c.Replicas()
	assert.False(t, st[0].In)
	assert.Equal(t, 1, st[0].Ejections)
	assert.Error(t, st[0].Why)
	assert.Equal(t, dispatch.ReplicaState{Addr: "b", In: true}, st[1], "readmitted, its failures forgotten")

	// A Client of one address has no replicas.
	one, err := dispatch.Dial(t.Context(), tr, "b")
	require.NoError(t, err)
	defer one.Close()
	assert.Nil(t, one.Replicas())
}

// A replica whose check fails is out, with the check's error for why,
// until a check succeeds; both changes are logged at Info, once each.
func TestReplicasStateCheck(t *testing.T) {
	tr := memory.New()
	echoServer(t, tr, "a", make(chan struct{}, 1), nil)
	echoServer(t, tr, "b", make(chan struct{}, 1), nil)
	var mu sync.Mutex
	sick := map[string]bool{"b": true}
	check := func(ctx context.Context, c *dispatch.Client) error {
		var name string
		if err := c.Call(ctx, "Who.Name", 0, &name); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if sick[name] {
			return errors.New("unhealthy")
		}
		return nil
	}
	var log infoLog
	c, err := dispatch.Dial(t.Context(), tr, "a,b", dispatch.WithResolver(resolver.Static{}), dispatch.WithLogger(log.logger()),
		dispatch.WithReplicaCheck(check, 5*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool { return !c.Replicas()[1].In }, waitLong, time.Millisecond, "b out")
	st := c.Replicas()
	assert.Equal(t, dispatch.ReplicaState{Addr: "a", In: true}, st[0])
	assert.EqualError(t, st[1].Why, "unhealthy")
	assert.Zero(t, st[1].Until, "out until a check succeeds, not for a time")
	assert.Zero(t, st[1].Ejections)

	mu.Lock()
	sick["b"] = false
	mu.Unlock()
	require.Eventually(t, func() bool { return c.Replicas()[1].In }, waitLong, time.Millisecond, "b back")
	assert.Equal(t, dispatch.ReplicaState{Addr: "b", In: true}, c.Replicas()[1])
	// The change is logged as it is made: the log may trail what
	// Replicas says by a moment.
	require.Eventually(t, func() bool { return len(log.replicaLines()) >= 2 }, waitLong, time.Millisecond)
	assert.Equal(t, []string{
		`level=INFO msg="dispatch: replica left out: its check failed" target=a,b replica=b`,
		`level=INFO msg="dispatch: replica readmitted: its check succeeded" target=a,b replica=b`,
	}, log.replicaLines())
}
