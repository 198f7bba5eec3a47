package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/tcp"
)

// The two-process rows, at 16B: the server runs in a child process (this
// test binary run again, serving and nothing else; see serveChild), the
// caller here, as between a plugin and its host:
//   - floor-tcp-proc, floor-unix-proc: floor-tcp's raw bytes over loopback
//     TCP and over a unix socket;
//   - zerodial-tcp-proc, zerodial-tcp-unix-proc, zerodial-mux-unix-proc:
//     zerodial-tcp's Client over loopback TCP, over a unix socket, and
//     zerodial-mux's over a unix socket;
//   - zerodial-shm-proc: zerodial's Client over shared memory (the shm
//     transport, Linux), met over a unix socket.
//
// zerodial-tcp-unix-proc and zerodial-shm-proc run at 64KiB and 1MiB too.
//
// cpu-ns/op counts the caller's process alone: the child's CPU is not
// measured.

// childEnv names the kind a child serves ("floor-tcp", "floor-unix",
// "tcp", "mux", "shm") and childAddrEnv the address it listens on.
const (
	childEnv     = "ZERODIAL_BENCH_CHILD"
	childAddrEnv = "ZERODIAL_BENCH_CHILD_ADDR"
)

func init() {
	register("floor-tcp-proc", func(tb testing.TB, _ size) func() callFunc {
		return rawProc(tb, "tcp", startChild(tb, "floor-tcp", "127.0.0.1:0"))
	}, size16)
	register("floor-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		return rawProc(tb, "unix", startChild(tb, "floor-unix", socketPath(tb)))
	}, size16)
	register("zerodial-tcp-proc", func(tb testing.TB, _ size) func() callFunc {
		return zerodialProc(tb, tcp.New(), startChild(tb, "tcp", "127.0.0.1:0"))
	}, size16)
	register("zerodial-tcp-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		return zerodialProc(tb, tcp.New(), startChild(tb, "tcp", "unix:"+socketPath(tb)))
	}, procSizes...)
	register("zerodial-mux-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		return zerodialProc(tb, mux.New(), startChild(tb, "mux", "unix:"+socketPath(tb)))
	}, size16)
	register("zerodial-shm-proc", func(tb testing.TB, _ size) func() callFunc {
		if runtime.GOOS != "linux" {
			tb.Skip("shared memory needs Linux")
		}
		return zerodialProc(tb, shm.New(), startChild(tb, "shm", "unix:"+socketPath(tb)))
	}, procSizes...)
}

// procSizes are the sizes of the two-process rows that compare a path's
// cost of moving bytes: the call, and bodies of 64 KiB and 1 MiB.
var procSizes = []size{size16, sizes[2], sizes[3]}

// rawProc makes floor-tcp's calls to a child's raw listener.
func rawProc(tb testing.TB, network, addr string) func() callFunc {
	var mu sync.Mutex
	var conns []net.Conn
	tb.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return func() callFunc {
		c, err := net.Dial(network, addr)
		if err != nil {
			tb.Fatal(err)
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return rawCaller(c)
	}
}

// zerodialProc dials a child's Server with tr, closed at the end.
func zerodialProc(tb testing.TB, tr transport.Transport, addr string) func() callFunc {
	tb.Cleanup(func() { tr.Close() })
	return dialZerodial(tb, tr, addr)
}

// startChild runs a child serving kind at addr and returns the address it
// listens on; the child ends, and is waited for, when tb does.
func startChild(tb testing.TB, kind, addr string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, childAddrEnv+"="+addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close() // the child's signal to end
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("child %s: %v", kind, err)
	}
	return strings.TrimSpace(line)
}

// serveChild is a child's whole life, when TestMain finds childEnv set:
// it listens, writes the address to stdout, serves until stdin ends, and
// returns the exit code.
func serveChild(kind, addr string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "bench child %s: %v\n", kind, err)
		return 1
	}
	switch kind {
	case "floor-tcp", "floor-unix":
		network := strings.TrimPrefix(kind, "floor-")
		ln, err := net.Listen(network, addr)
		if err != nil {
			return fail(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go serveRawTCP(c, 0)
			}
		}()
		fmt.Println(ln.Addr().String())
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
		return 0
	case "tcp", "mux", "shm":
		var tr transport.Transport = tcp.New()
		switch kind {
		case "mux":
			tr = mux.New()
		case "shm":
			tr = shm.New()
		}
		srv := dispatch.NewServer()
		if err := registerReflect(srv); err != nil {
			return fail(err)
		}
		l, err := tr.Listen(addr)
		if err != nil {
			return fail(err)
		}
		if err := srv.Start(l); err != nil {
			return fail(err)
		}
		fmt.Println(l.Addr().String())
		io.Copy(io.Discard, os.Stdin)
		srv.Shutdown(context.Background())
		tr.Close()
		return 0
	}
	return fail(fmt.Errorf("unknown kind"))
}
