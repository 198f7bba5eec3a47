package dispatchtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/zerodial/transport/dispatch"
)

// streamProbe is what the streams' handlers report.
type streamProbe struct {
	ended chan error // a handler's context error when it returned
	sent  atomic.Int64
}

// registerStreams registers the streams of the stream cases, every one
// borrowing, so that a ShortcutDirect client takes the direct path.
func registerStreams(srv *dispatch.Server) (*streamProbe, error) {
	pr := &streamProbe{ended: make(chan error, 64)}
	var errs []error
	reg := func(name string, fn func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error) {
		errs = append(errs, dispatch.HandleStream(srv, name, fn, dispatch.Borrows()))
	}
	first := func(s *dispatch.ServerStream[Num, Num]) (int, error) {
		for m, err := range s.Recv() {
			if err != nil {
				return 0, err
			}
			return m.N, nil
		}
		return 0, errors.New("no arguments")
	}
	// Count sends 0 … n-1 for an argument n.
	reg("S.Count", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n, err := first(s)
		if err != nil {
			return err
		}
		var m Num
		for i := range n {
			m.N = i
			if err := s.Send(&m); err != nil {
				return err
			}
		}
		return nil
	})
	// Sum checks that it gets 1, 2, 3, … in order and sends their count.
	reg("S.Sum", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n := 0
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			if n++; m.N != n {
				return fmt.Errorf("message %d is %d", n, m.N)
			}
		}
		return s.Send(&Num{n})
	})
	reg("S.Echo", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	})
	// Fail sends n messages, then fails.
	reg("S.Fail", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		n, err := first(s)
		if err != nil {
			return err
		}
		for i := range n {
			if err := s.Send(&Num{i}); err != nil {
				return err
			}
		}
		return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "no more"}
	})
	reg("S.Panic", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		_ = s.Send(&Num{1})
		panic("boom")
	})
	// Flood sends until Send fails, counting what it sent, and reports its
	// context's error.
	reg("S.Flood", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		var m Num
		for {
			if err := s.Send(&m); err != nil {
				pr.ended <- ctx.Err()
				return err
			}
			m.N++
			pr.sent.Add(1)
		}
	})
	// Lend sends until Send fails, and reports Send's error.
	reg("S.Lend", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		var m Num
		for {
			if err := s.Send(&m); err != nil {
				pr.ended <- err
				return err
			}
			m.N++
		}
	})
	// Wait sets reply metadata, sends one message and waits for its
	// context to end.
	reg("S.Wait", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error {
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"r": "late"}); err != nil {
			return err
		}
		if err := s.Send(&Num{7}); err != nil {
			return err
		}
		<-ctx.Done()
		pr.ended <- ctx.Err()
		return ctx.Err()
	})
	// Early returns at once, whatever the caller sends.
	reg("S.Early", func(ctx context.Context, s *dispatch.ServerStream[Num, Num]) error { return nil })
	// Meta sends back the caller's metadata "k", whether its path is
	// named and its method, and sets reply metadata.
	errs = append(errs, dispatch.HandleStream(srv, "S.Meta", func(ctx context.Context, s *dispatch.ServerStream[Num, string]) error {
		ci, _ := dispatch.CallInfoFrom(ctx)
		for _, v := range []string{dispatch.MetadataFrom(ctx)["k"], fmt.Sprint(ci.Path != ""), ci.Method} {
			if err := s.Send(&v); err != nil {
				return err
			}
		}
		return dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"r": "reply"})
	}, dispatch.Borrows()))
	// Bytes echoes raw messages.
	errs = append(errs, dispatch.HandleStream(srv, "S.Bytes", func(ctx context.Context, s *dispatch.ServerStream[[]byte, []byte]) error {
		for m, err := range s.Recv() {
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
		return nil
	}, dispatch.Borrows()))
	errs = append(errs, dispatch.Handle(srv, "S.Unary", func(ctx context.Context, args *Num, reply *Num) error {
		*reply = *args
		return nil
	}))
	return pr, errors.Join(errs...)
}
