package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
)

// replyMDServer serves methods that set reply metadata, and an
// interceptor that adds to it after the handler. MD.Slow replies once its
// context has ended and slowRelease is closed.
func replyMDServer(t *testing.T, slowRelease <-chan struct{}) *dispatch.Server {
	late := make(chan context.Context, 1)
	srv := dispatch.NewServer(dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
		err := next(ctx, args, reply)
		if method != "MD.None" && method != "MD.Slow" {
			_ = dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"by": "interceptor"})
		}
		return err
	}))
	require.NoError(t, dispatch.Handle(srv, "MD.Set", func(ctx context.Context, _ *struct{}, reply *int) error {
		*reply = 1
		if err := dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"a": "1", "by": "handler"}); err != nil {
			return err
		}
		late <- ctx
		return nil
	}, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "MD.Fail", func(ctx context.Context, _ *struct{}, reply *int) error {
		_ = dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"why": "refused"})
		return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "no"}
	}, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "MD.None", func(ctx context.Context, _ *struct{}, reply *int) error {
		return nil
	}, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "MD.Slow", func(ctx context.Context, _ *struct{}, reply *int) error {
		_ = dispatch.SetReplyMetadata(ctx, dispatch.Metadata{"late": "yes"})
		<-ctx.Done()
		<-slowRelease // the reply comes after the caller gave up
		return ctx.Err()
	}, dispatch.Borrows()))
	require.NoError(t, dispatch.Handle(srv, "MD.Late", func(ctx context.Context, _ *struct{}, reply *int) error {
		// The context of an earlier call, whose reply is gone.
		select {
		case old := <-late:
			if err := dispatch.SetReplyMetadata(old, dispatch.Metadata{"x": "y"}); err == nil {
				return errors.New("SetReplyMetadata after the call ended succeeded")
			}
		default:
			return errors.New("no earlier call")
		}
		return nil
	}, dispatch.Borrows()))
	return srv
}

// A handler's and a Server interceptor's reply metadata reach a caller that
// captures it, with a success and with an error, on every path; a reply
// without metadata, or an error reply of the Server's own, leaves nil; a
// call whose context ends first leaves the capture as it was; captures nest.
func TestReplyMetadata(t *testing.T) {
	for _, p := range pathNames {
		t.Run(string(p), func(t *testing.T) {
			var inner dispatch.Metadata
			slowRelease := make(chan struct{})
			defer func() {
				select {
				case <-slowRelease:
				default:
					close(slowRelease)
				}
			}()
			c, _ := dialPath(t, p, replyMDServer(t, slowRelease), dispatch.WithInterceptors(func(ctx context.Context, method string, args, reply any, next dispatch.Handler) error {
				return next(dispatch.CaptureReplyMetadata(ctx, &inner), args, reply)
			}))
			call := func(ctx context.Context, method string) (dispatch.Metadata, error) {
				md := dispatch.Metadata{"stale": "x"}
				err := c.Call(dispatch.CaptureReplyMetadata(ctx, &md), method, struct{}{}, new(int))
				return md, err
			}
			bg := context.Background()

			md, err := call(bg, "MD.Set")
			require.NoError(t, err)
			assert.Equal(t, dispatch.Metadata{"a": "1", "by": "interceptor"}, md, "merged, the interceptor's last")
			assert.Equal(t, md, inner, "a Client interceptor's capture gets it too")
			md["a"] = "changed"
			assert.Equal(t, "1", inner["a"], "each capture has its own copy")

			md, err = call(bg, "MD.Fail")
			assert.Equal(t, dispatch.CodePermissionDenied, codeOf(err))
			assert.Equal(t, dispatch.Metadata{"why": "refused", "by": "interceptor"}, md)

			md, err = call(bg, "MD.None")
			require.NoError(t, err)
			assert.Nil(t, md, "a reply without metadata")

			md, err = call(bg, "MD.Nope")
			assert.Equal(t, dispatch.CodeNotFound, codeOf(err))
			assert.Nil(t, md, "the Server's own error reply carries none")

			ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
			defer cancel()
			md, err = call(ctx, "MD.Slow")
			// The handler replies only now, after the call returned, where
			// it slept 100 ms: a caller a loaded machine did not run that
			// long could find the reply in.
			close(slowRelease)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, dispatch.Metadata{"stale": "x"}, md, "no reply arrived: the capture is untouched")

			_, err = call(bg, "MD.Late")
			assert.NoError(t, err, "SetReplyMetadata once the call ended")
		})
	}
}

// SetReplyMetadata outside a handler's context fails rather than being
// dropped silently.
func TestSetReplyMetadataOutsideACall(t *testing.T) {
	err := dispatch.SetReplyMetadata(context.Background(), dispatch.Metadata{"a": "b"})
	assert.ErrorContains(t, err, "not a call's handler context")
	assert.Panics(t, func() { dispatch.CaptureReplyMetadata(context.Background(), nil) })
}
