package hardening

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/tcp"
)

// Msg is what Echo.Echo takes and returns: a body, and who sent it, so that
// a reply handed to the wrong call shows.
type Msg struct {
	Client int
	Seq    uint64
	Body   []byte
}

// service is what every test serves:
//
//   - Hold.Wait blocks until its context ends (or release is closed), so a
//     test can have calls in flight for as long as it likes;
//   - Hold.Count says how many Hold.Wait calls are blocked now;
//   - Echo.Echo returns its argument.
//
// All three borrow (dispatch.Borrows), so a ShortcutDirect client calls them
// with no codec.
type service struct {
	held    atomic.Int64
	release chan struct{}
	// onEcho, when set, sees every Echo call the server runs (the load
	// test counts them).
	onEcho func(*Msg)
}

func newService() *service { return &service{release: make(chan struct{})} }

func (s *service) register(srv *dispatch.Server) error {
	return errors.Join(
		dispatch.Handle(srv, "Hold.Wait", func(ctx context.Context, args *int, reply *int) error {
			s.held.Add(1)
			defer s.held.Add(-1)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.release:
				*reply = *args
				return nil
			}
		}, dispatch.Borrows()),
		dispatch.Handle(srv, "Hold.Count", func(ctx context.Context, _ *struct{}, reply *int64) error {
			*reply = s.held.Load()
			return nil
		}, dispatch.Borrows()),
		dispatch.Handle(srv, "Echo.Echo", func(ctx context.Context, args *Msg, reply *Msg) error {
			if s.onEcho != nil {
				s.onEcho(args)
			}
			*reply = *args
			return nil
		}, dispatch.Borrows()),
	)
}

// newServer returns a Server of a new service, closed when the test ends.
func newServer(t testing.TB, opts ...dispatch.ServerOption) (*dispatch.Server, *service) {
	t.Helper()
	srv := dispatch.NewServer(opts...)
	svc := newService()
	if err := svc.register(srv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, svc
}

// newTransport returns a new transport of the named kind; a mux or shm
// one is closed when the test ends. "tcp-unix" and "mux-unix" are tcp and
// mux, served on a unix socket (listenAddr).
func newTransport(t testing.TB, kind string) transport.Transport {
	t.Helper()
	switch strings.TrimSuffix(kind, "-unix") {
	case "memory":
		return memory.New()
	case "tcp":
		return tcp.New()
	case "mux":
		tr := mux.New()
		t.Cleanup(func() { tr.Close() })
		return tr
	case "shm":
		if runtime.GOOS != "linux" {
			t.Skip("shared memory needs Linux")
		}
		tr := shm.New()
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	t.Fatalf("no transport %q", kind)
	return nil
}

// listenAddr is what a server of kind listens on: a free loopback port,
// or for "tcp-unix" and "mux-unix" a unix socket ("unix:PATH",
// docs/unix.md) of a free name, in a short-named directory removed when t
// ends (a socket path has at most 107 bytes).
// For "shm", a free name in Linux's abstract unix namespace.
func listenAddr(t testing.TB, kind string) string {
	t.Helper()
	if kind == "shm" {
		return "" // a free abstract unix name, which a restart takes again
	}
	if !strings.HasSuffix(kind, "-unix") {
		return "127.0.0.1:0"
	}
	dir, err := os.MkdirTemp("", "zdh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return "unix:" + filepath.Join(dir, "s*.sock")
}

// serve starts srv on a new listener of tr at addr and returns the
// listener's address.
func serve(t testing.TB, srv *dispatch.Server, tr transport.Transport, addr string) string {
	t.Helper()
	l, err := tr.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		l.Close()
		t.Fatal(err)
	}
	return l.Addr().String()
}

// dial returns a Client of addr over tr, closed when the test ends.
func dial(t testing.TB, tr transport.Transport, addr string, opts ...dispatch.ClientOption) *dispatch.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dispatch.Dial(ctx, tr, addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echo makes one Echo call and checks its reply.
func echo(ctx context.Context, c *dispatch.Client, seq uint64, body []byte) error {
	var reply Msg
	if err := c.Call(ctx, "Echo.Echo", &Msg{Seq: seq, Body: body}, &reply); err != nil {
		return err
	}
	if reply.Seq != seq || string(reply.Body) != string(body) {
		return fmt.Errorf("echo %d of %d bytes came back as %d of %d bytes", seq, len(body), reply.Seq, len(reply.Body))
	}
	return nil
}

// bound returns d, a bound on how long something may take that the issue
// names, with headroom under the race detector: it instruments every
// memory access of the library's goroutines and the test's, several times
// slower, and CI runs it on two loaded cores, where a scheduling delay of a
// few hundred milliseconds is ordinary. The bound stays a bound: what the
// test waits for must still happen, only later.
func bound(d time.Duration) time.Duration {
	if raceEnabled {
		return 3 * d
	}
	return d
}

// errKind classifies an error, for the tests that demand that many calls
// fail alike.
func errKind(err error) string {
	var de *dispatch.Error
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, dispatch.ErrShutdown):
		return "ErrShutdown"
	case errors.As(err, &de):
		return fmt.Sprintf("*dispatch.Error code %q", de.Code)
	case errors.Is(err, transport.ErrConnectionRefused):
		return "ErrConnectionRefused"
	}
	return fmt.Sprintf("%T", err)
}

// countingTransport counts Dials, so a test can check that the shortcut
// opened no socket. It passes on what the wrapped transport speaks, as the
// shortcut needs.
type countingTransport struct {
	transport.Transport
	dials atomic.Int32
}

func (c *countingTransport) Wire() transport.Wire {
	if wr, ok := c.Transport.(transport.WireReporter); ok {
		return wr.Wire()
	}
	return transport.Wire{}
}

func (c *countingTransport) Dial(ctx context.Context, addr string) (transport.Socket, error) {
	c.dials.Add(1)
	return c.Transport.Dial(ctx, addr)
}

// The helper process. A test that needs a server it can kill for real runs
// this test binary again with -test.run=^TestHelperServer$ and the
// environment below, as os/exec's own tests do: the child serves the
// service on the address given, prints "ADDR <address>" on its standard
// output, and serves until its standard input ends (the parent closed it,
// or died) or it is killed.
const (
	helperEnv     = "HARDENING_HELPER_TRANSPORT" // "tcp", "mux", "tcp-unix", "mux-unix", "shm"
	helperAddrEnv = "HARDENING_HELPER_ADDR"      // what to listen on
)

// TestHelperServer is the child process's body, not a test: run without
// the environment above, it does nothing.
func TestHelperServer(t *testing.T) {
	kind := os.Getenv(helperEnv)
	if kind == "" {
		t.Skip("the server of a helper process, for the tests that kill one; runs only when they start it")
	}
	tr := newTransport(t, kind)
	srv, _ := newServer(t)
	addr := serve(t, srv, tr, os.Getenv(helperAddrEnv))
	fmt.Printf("ADDR %s\n", addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// child is a helper process serving the service.
type child struct {
	cmd   *exec.Cmd
	addr  string
	stdin *os.File      // the parent's end; closing it ends the child
	read  chan struct{} // closed when the child's output has ended
	once  sync.Once
}

// startChild starts a helper process serving over kind at listen, run
// through wrap (for instance "ip netns exec NS") when given, and waits for
// its address. The child is killed when the test ends, if it is still
// running.
func startChild(t testing.TB, kind, listen string, wrap ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string(nil), wrap...), exe, "-test.run=^TestHelperServer$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+kind, helperAddrEnv+"="+listen)
	cmd.Stderr = os.Stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: inW, read: make(chan struct{})}
	t.Cleanup(c.kill)
	addrs := make(chan string, 1)
	go func() {
		defer close(c.read)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addrs <- a
			}
		}
	}()
	select {
	case c.addr = <-addrs:
	case <-c.read:
		c.kill()
		t.Fatalf("the helper process (%s on %q) ended without serving: %v", kind, listen, cmd.ProcessState)
	case <-time.After(20 * time.Second):
		t.Fatalf("the helper process (%s on %q) did not start serving within 20 s", kind, listen)
	}
	return c
}

// kill ends the child at once with SIGKILL — no clean-up, no FIN it chose
// to send, as a crash or an OOM kill would — and waits for it to be gone.
func (c *child) kill() {
	c.once.Do(func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		c.stdin.Close()
		<-c.read
	})
}

// countFDs returns how many file descriptors this process has open.
func countFDs(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(fds)
}
