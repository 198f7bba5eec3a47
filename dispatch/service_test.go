package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zerodial/transport/dispatch"
)

// The service every path serves in these tests.

type Args struct {
	A, B int
}

type Reply struct {
	X    int
	S    string
	List []int
}

type Blob struct {
	Data []byte
}

type CtxInfo struct {
	HasDeadline  bool
	DeadlineSane bool // within the caller's timeout
	Metadata     map[string]string
	SawForeign   bool // a context value the caller set, which must not cross
}

type foreignKey struct{}

type Arith struct {
	started  chan struct{} // Block signals here when it starts
	canceled chan error    // Block reports what ended its context
	// blindStarted: SleepBlind signals here when it starts.
	blindStarted chan struct{}
	// SlowEcho signals echoStarted when it starts, and goes on when
	// echoRelease lets it.
	echoStarted, echoRelease chan struct{}
}

func newArith() *Arith {
	return &Arith{started: make(chan struct{}, 1), canceled: make(chan error, 1), blindStarted: make(chan struct{}, 1),
		echoStarted: make(chan struct{}, 1), echoRelease: make(chan struct{}, 1)}
}

func (t *Arith) Multiply(args Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (t *Arith) MultiplyPtr(args *Args, reply *int) error {
	*reply = args.A * args.B
	return nil
}

func (t *Arith) Fill(args Args, reply *Reply) error {
	reply.X = args.A
	reply.S = fmt.Sprint(args.B)
	reply.List = append(reply.List, args.A, args.B)
	return nil
}

func (t *Arith) Nothing(args Args, reply *Reply) error { return nil }

func (t *Arith) Fail(args Args, reply *Reply) error {
	reply.X = 7 // written, but the call fails: the caller must see zero
	return errors.New("arith: boom")
}

func (t *Arith) FailCode(args Args, reply *int) error {
	return fmt.Errorf("wrapped: %w", &dispatch.Error{Code: "custom", Message: "arith: custom failure"})
}

// errNoFunds is a sentinel error a service exports for its callers.
var errNoFunds = &dispatch.Error{Code: dispatch.CodeFailedPrecondition, Message: "bank: insufficient funds"}

func (t *Arith) Sentinel(args Args, reply *int) error { return fmt.Errorf("withdraw: %w", errNoFunds) }

func (t *Arith) Panic(args Args, reply *int) error {
	panic("kaboom")
}

// Sleep waits for its context, or args.A milliseconds.
func (t *Arith) Sleep(ctx context.Context, args Args, reply *int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(args.A) * time.Millisecond):
		*reply = 1
		return nil
	}
}

// SleepBlind sleeps args.A milliseconds and never looks at a context, as
// a handler ported from net/rpc does. It signals blindStarted first.
func (t *Arith) SleepBlind(args Args, reply *int) error {
	select {
	case t.blindStarted <- struct{}{}:
	default:
	}
	time.Sleep(time.Duration(args.A) * time.Millisecond)
	*reply = 1
	return nil
}

// Block waits until its context ends and reports why.
func (t *Arith) Block(ctx context.Context, args Args, reply *int) error {
	t.started <- struct{}{}
	<-ctx.Done()
	t.canceled <- ctx.Err()
	return ctx.Err()
}

func (t *Arith) Context(ctx context.Context, args Args, reply *CtxInfo) error {
	dl, ok := ctx.Deadline()
	reply.HasDeadline = ok
	reply.DeadlineSane = ok && time.Until(dl) > 0 && time.Until(dl) <= time.Duration(args.A)*time.Millisecond
	reply.Metadata = dispatch.MetadataFrom(ctx)
	reply.SawForeign = ctx.Value(foreignKey{}) != nil
	return nil
}

func (t *Arith) Echo(args []byte, reply *[]byte) error {
	*reply = append((*reply)[:0], args...)
	return nil
}

func (t *Arith) EchoBlob(args *Blob, reply *Blob) error {
	reply.Data = append(reply.Data[:0], args.Data...)
	return nil
}

// SlowEcho signals echoStarted, then copies args.Data to the reply once
// echoRelease lets it go on (or after args.Delay milliseconds, for a test
// that never does), never looking at its context: a borrowing handler still
// running when its caller has gone.
func (t *Arith) SlowEcho(args *Delayed, reply *Blob) error {
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

type Delayed struct {
	Delay int
	Data  []byte
}

// Keeper is a service written as net/rpc allows and as Borrows forbids: it
// keeps what it is given and hands out its own state. Registered without
// Borrows, it is correct on every path.
type Keeper struct {
	mu   sync.Mutex
	kept map[string]string // the last Keep's Tags, as given
	own  map[string]string // its own state, which State returns
}

type Tagged struct {
	Name string
	Tags map[string]string
}

func newStateKeeper() *Keeper { return &Keeper{own: map[string]string{"mine": "yes"}} }

// Keep keeps args.Tags.
func (k *Keeper) Keep(args Tagged, reply *int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.kept = args.Tags
	*reply = len(args.Tags)
	return nil
}

// State returns the keeper's own map.
func (k *Keeper) State(args Args, reply *Tagged) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	reply.Name = "state"
	reply.Tags = k.own
	return nil
}

// Len returns the length of args.Data.
func (k *Keeper) Len(args Blob, reply *int) error {
	*reply = len(args.Data)
	return nil
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
