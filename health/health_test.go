package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/health"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checked serves h on a new dispatch Server, and returns Clients of it
// over the network and over the shortcut.
func checked(t *testing.T, h *health.Server) map[string]*dispatch.Client {
	_, clients := checkedBy(t, h)
	return clients
}

// checkedBy is checked, also returning the dispatch Server.
func checkedBy(t *testing.T, h *health.Server) (*dispatch.Server, map[string]*dispatch.Client) {
	srv := dispatch.NewServer()
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, h.Register(srv))
	clients := map[string]*dispatch.Client{}
	mem := memory.New()
	ml, err := mem.Listen("")
	require.NoError(t, err)
	require.NoError(t, srv.Start(ml))
	tl, err := tcp.New().Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, srv.Start(tl))
	dial := func(name string, c *dispatch.Client, err error) {
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		clients[name] = c
	}
	c, err := dispatch.Dial(context.Background(), mem, ml.Addr().String())
	dial("memory", c, err)
	c, err = dispatch.Dial(context.Background(), tcp.New(), tl.Addr().String())
	dial("tcp", c, err)
	c, err = dispatch.Dial(context.Background(), tcp.New(), tl.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutCopy))
	dial("shortcut", c, err)
	return srv, clients
}

// A check answers the status the application set, for the whole server and
// per service, on every path; an unknown service is not found; Shutdown
// turns everything NotServing and keeps it so until Resume.
func TestCheck(t *testing.T) {
	h := health.NewServer()
	h.SetServingStatus("Store", health.Serving)
	h.SetServingStatus("Cache", health.NotServing)
	for name, c := range checked(t, h) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			for service, want := range map[string]health.Status{"": health.Serving, "Store": health.Serving, "Cache": health.NotServing} {
				got, err := health.Check(ctx, c, service)
				require.NoError(t, err)
				assert.Equal(t, want, got, "service %q", service)
			}
			_, err := health.Check(ctx, c, "Nope")
			var de *dispatch.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, dispatch.CodeNotFound, de.Code)
			assert.Equal(t, "health: unknown service Nope", de.Message)
		})
	}

	h.Shutdown()
	h.SetServingStatus("Store", health.Serving) // ignored while shut down
	for name, c := range checked(t, h) {
		for _, service := range []string{"", "Store", "Cache"} {
			got, err := health.Check(context.Background(), c, service)
			require.NoError(t, err)
			assert.Equal(t, health.NotServing, got, "%s: service %q after Shutdown", name, service)
		}
	}
	h.Resume()
	got, err := health.Check(context.Background(), checked(t, h)["memory"], "Cache")
	require.NoError(t, err)
	assert.Equal(t, health.Serving, got)
}

// An HTTP probe gets 200 for Serving, 503 for anything else, 404 for an
// unknown service, with the status in the body.
func TestServeHTTP(t *testing.T) {
	h := health.NewServer()
	h.SetServingStatus("Cache", health.NotServing)
	probe := func(target string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := probe("/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "SERVING\n", body)
	code, body = probe("/healthz?service=Cache")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "NOT_SERVING\n", body)
	code, body = probe("/healthz?service=Nope")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, "SERVICE_UNKNOWN\n", body)
	h.Shutdown()
	code, _ = probe("/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
}

// Watch yields a service's status at once and then each change, on every
// path, an unknown service as ServiceUnknown until it gets a status; the
// caller's context ends it.
func TestWatch(t *testing.T) {
	h := health.NewServer()
	for name, c := range checked(t, h) {
		t.Run(name, func(t *testing.T) {
			h.Resume()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan health.Status, 8)
			ended := make(chan error, 1)
			service := "Store-" + name
			go func() {
				for s, err := range health.Watch(ctx, c, service) {
					if err != nil {
						ended <- err
						return
					}
					got <- s
				}
				ended <- nil
			}()
			next := func(what string) health.Status {
				t.Helper()
				select {
				case s := <-got:
					return s
				case <-time.After(waitLong):
					t.Fatalf("no status %s", what)
					return ""
				}
			}
			assert.Equal(t, health.ServiceUnknown, next("at once"))
			h.SetServingStatus(service, health.Serving)
			assert.Equal(t, health.Serving, next("after it was set"))
			h.SetServingStatus("Other", health.NotServing) // not this service: nothing yielded
			h.SetServingStatus(service, health.NotServing)
			assert.Equal(t, health.NotServing, next("after it changed"))
			h.SetServingStatus(service, health.Serving)
			assert.Equal(t, health.Serving, next("after it changed back"))
			h.Shutdown()
			assert.Equal(t, health.NotServing, next("after Shutdown"))
			cancel()
			select {
			case err := <-ended:
				assert.ErrorIs(t, err, context.Canceled)
			case <-time.After(waitLong):
				t.Fatal("Watch did not end with its context")
			}
		})
	}
}

// Bug: a watcher kept the dispatch Server's Shutdown waiting until its
// ctx ended. At Shutdown, each watch reports NotServing and ends without
// an error, and Shutdown returns long before its ctx ends.
func TestWatchEndsAtServerShutdown(t *testing.T) {
	h := health.NewServer()
	h.SetServingStatus("Store", health.Serving)
	srv, clients := checkedBy(t, h)
	type report struct {
		path     string
		statuses []health.Status
		err      error
	}
	first, ended := make(chan struct{}, len(clients)), make(chan report, len(clients))
	for name, c := range clients {
		go func() {
			r := report{path: name}
			for s, err := range health.Watch(context.Background(), c, "Store") {
				if err != nil {
					r.err = err
					break
				}
				if r.statuses = append(r.statuses, s); len(r.statuses) == 1 {
					first <- struct{}{}
				}
			}
			ended <- r
		}()
	}
	for range clients {
		select {
		case <-first:
		case <-time.After(waitLong):
			t.Fatal("a watch reported nothing")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	for range clients {
		select {
		case r := <-ended:
			assert.NoError(t, r.err, r.path)
			assert.Equal(t, []health.Status{health.Serving, health.NotServing}, r.statuses, r.path)
		case <-time.After(waitLong):
			t.Fatal("a watch did not end at Shutdown")
		}
	}
	select {
	case err := <-shut:
		assert.NoError(t, err)
	case <-time.After(waitLong):
		t.Fatal("Shutdown waited for its watchers")
	}
}
