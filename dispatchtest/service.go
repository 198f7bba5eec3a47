package dispatchtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// The services every case's Server serves. Their types are exported so
// that a binding's codec and a reader of a failing case's words can name
// them; a binding needs nothing else of them.

// Args are the arguments of most unary methods.
type Args struct {
	A, B int
}

// Reply is a reply with a slice, which a call must zero first.
type Reply struct {
	X    int
	S    string
	List []int
}

// Blob carries bytes.
type Blob struct {
	Data []byte
}

// CtxInfo is what Arith.Context saw of its context.
type CtxInfo struct {
	HasDeadline  bool
	DeadlineSane bool // within the caller's timeout
	Metadata     map[string]string
	SawForeign   bool // a context value the caller set, which must not cross
}

// Tagged is the argument Keeper.Keep keeps, and the reply Keeper.State
// fills with its own state.
type Tagged struct {
	Name string
	Tags map[string]string
}

// Delayed is the argument of Arith.SlowEcho.
type Delayed struct {
	Delay int
	Data  []byte
}

// Num is the message of most streams.
type Num struct{ N int }

// foreignKey is a context value a caller sets, which must not reach the
// handler.
type foreignKey struct{}

// arith is the service of the unary cases; every method borrows.
type arith struct {
	started  chan struct{} // Block signals here when it starts
	canceled chan error    // Block reports what ended its context
	// blindStarted: SleepBlind signals here when it starts, and returns
	// once blindRelease is closed (release), or after args.A milliseconds.
	blindStarted, blindRelease chan struct{}
	releaseOnce                sync.Once
	// SlowEcho signals echoStarted when it starts, and goes on when
	// echoRelease lets it.
	echoStarted, echoRelease chan struct{}
}

func newArith() *arith {
	return &arith{started: make(chan struct{}, 1), canceled: make(chan error, 1),
		blindStarted: make(chan struct{}, 1), blindRelease: make(chan struct{}),
		echoStarted: make(chan struct{}, 1), echoRelease: make(chan struct{}, 1)}
}

func (t *arith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (t *arith) MultiplyPtr(args *Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (t *arith) Fill(args Args, reply *Reply) error {
	reply.X = args.A
	reply.S = fmt.Sprint(args.B)
	reply.List = append(reply.List, args.A, args.B)
	return nil
}

func (t *arith) Nothing(args Args, reply *Reply) error { return nil }

func (t *arith) Fail(args Args, reply *Reply) error {
	reply.X = 7 // written, but the call fails: the caller must see zero
	return errors.New("arith: boom")
}

func (t *arith) FailCode(args Args, reply *int) error {
	return fmt.Errorf("wrapped: %w", &dispatch.Error{Code: "custom", Message: "arith: custom failure"})
}

// errNoFunds is a sentinel error a service exports for its callers.
var errNoFunds = &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "bank: insufficient funds"}

func (t *arith) Sentinel(args Args, reply *int) error { return fmt.Errorf("withdraw: %w", errNoFunds) }

func (t *arith) Panic(args Args, reply *int) error {
	panic("kaboom")
}

// Sleep waits for its context, or args.A milliseconds.
func (t *arith) Sleep(ctx context.Context, args Args, reply *int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(args.A) * time.Millisecond):
		*reply = 1
		return nil
	}
}

// SleepBlind never looks at a context, as a handler ported from net/rpc
// does: it signals blindStarted, then waits for blindRelease or args.A
// milliseconds.
func (t *arith) SleepBlind(args Args, reply *int) error {
	select {
	case t.blindStarted <- struct{}{}:
	default:
	}
	select {
	case <-t.blindRelease:
	case <-time.After(time.Duration(args.A) * time.Millisecond):
	}
	*reply = 1
	return nil
}

// release lets every SleepBlind return.
func (t *arith) release() { t.releaseOnce.Do(func() { close(t.blindRelease) }) }

// Block waits until its context ends and reports why.
func (t *arith) Block(ctx context.Context, args Args, reply *int) error {
	t.started <- struct{}{}
	<-ctx.Done()
	t.canceled <- ctx.Err()
	return ctx.Err()
}

func (t *arith) Context(ctx context.Context, args Args, reply *CtxInfo) error {
	dl, ok := ctx.Deadline()
	reply.HasDeadline = ok
	reply.DeadlineSane = ok && time.Until(dl) > 0 && time.Until(dl) <= time.Duration(args.A)*time.Millisecond
	reply.Metadata = dispatch.MetadataFrom(ctx)
	reply.SawForeign = ctx.Value(foreignKey{}) != nil
	return nil
}

func (t *arith) Echo(args []byte, reply *[]byte) error {
	*reply = append((*reply)[:0], args...)
	return nil
}

func (t *arith) EchoBlob(args *Blob, reply *Blob) error {
	reply.Data = append(reply.Data[:0], args.Data...)
	return nil
}

// SlowEcho signals echoStarted, then copies args.Data to the reply once
// echoRelease lets it go on (or after args.Delay milliseconds, for a case
// that never does), never looking at its context: a borrowing handler
// still running when its caller has gone.
func (t *arith) SlowEcho(args *Delayed, reply *Blob) error {
	select {
	case t.echoStarted <- struct{}{}:
	default:
	}
	select {
	case <-t.echoRelease:
	case <-time.After(time.Duration(args.Delay) * time.Millisecond):
	}
	reply.Data = append(reply.Data[:0], args.Data...)
	return nil
}

// keeper is a service written as net/rpc allows and as Borrows forbids: it
// keeps what it is given and hands out its own state. Registered without
// Borrows, it is correct on every path.
type keeper struct {
	mu   sync.Mutex
	kept map[string]string // the last Keep's Tags, as given
	own  map[string]string // its own state, which State returns
}

func newKeeper() *keeper { return &keeper{own: map[string]string{"mine": "yes"}} }

// Keep keeps args.Tags.
func (k *keeper) Keep(args Tagged, reply *int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept = args.Tags
	*reply = len(args.Tags)
	return nil
}

// State returns the keeper's own map.
func (k *keeper) State(args Args, reply *Tagged) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	reply.Name = "state"
	reply.Tags = k.own
	return nil
}

// Len returns the length of args.Data.
func (k *keeper) Len(args Blob, reply *int) error {
	*reply = len(args.Data)
	return nil
}

// snapshot returns what the keeper holds, as text.
func (k *keeper) snapshot() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprintf("kept=%v own=%v", k.kept, k.own)
}

// recorder is an interceptor that logs what it sees.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) interceptor(name string) dispatch.Interceptor {
	return func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		r.add(fmt.Sprintf("%s> %s %T %+v md=%v", name, method, args, deref(args), dispatch.MetadataFrom(ctx)))
		err := next(ctx, args, reply)
		r.add(fmt.Sprintf("<%s %T err=%v", name, reply, err))
		return err
	}
}

func deref(v any) any {
	switch v := v.(type) {
	case *Args:
		return *v
	case *Blob:
		return len(v.Data)
	case *Delayed:
		return len(v.Data)
	case *[]byte:
		return len(*v)
	case *int:
		return *v
	}
	return v
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.log
	r.log = nil
	return l
}

// waitFor adds to got what is logged until an entry starting with prefix is
// in it, or for waitLong, a hang guard.
func (r *recorder) waitFor(got []string, prefix string) []string {
	for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		got = append(got, r.take()...)
		for _, s := range got {
			if strings.HasPrefix(s, prefix) {
				return got
			}
		}
	}
	return got
}

// services is what a case's Server serves, and what its handlers report.
type services struct {
	arith  *arith
	keeper *keeper
	rec    *recorder
	probe  *streamProbe
}

// newServer is a Server of the suite's services, with the recording
// interceptors, and opts.
func newServer(opts ...dispatch.ServerOption) (*dispatch.Server, *services, error) {
	s := &services{arith: newArith(), keeper: newKeeper(), rec: new(recorder)}
	opts = append([]dispatch.ServerOption{dispatch.WithInterceptors(s.rec.interceptor("outer"), s.rec.interceptor("inner"))}, opts...)
	srv := dispatch.NewServer(opts...)
	err := errors.Join(
		srv.RegisterName("Arith", s.arith, dispatch.Borrows()),
		srv.RegisterName("Keeper", s.keeper),
		dispatch.Handle(srv, "Gen.Add", func(ctx context.Context, args *Args, reply *int) error {
			*reply = args.A + args.B
			return nil
		}, dispatch.Borrows()),
	)
	if err != nil {
		return nil, nil, err
	}
	s.probe, err = registerStreams(srv)
	return srv, s, err
}
