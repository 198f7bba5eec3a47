package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/shm"
	"github.com/zerodial/transport/tcp"
)

// The two-process rows: the server runs in a child process (this test
// binary run again, serving and nothing else; see serveChild), the caller
// here, as between a plugin and its host:
//   - floor-tcp-proc, floor-unix-proc: floor-tcp's raw bytes over loopback
//     TCP and over a unix socket;
//   - zerodial-tcp-proc, zerodial-tcp-unix-proc, zerodial-mux-unix-proc:
//     zerodial-tcp's Client over loopback TCP, over a unix socket, and
//     zerodial-mux's over a unix socket;
//   - netrpc-unix-proc, grpc-unix-proc: the standard library's net/rpc
//     (gob) and grpc-go over a unix socket, the peers of the rows over
//     one, as go-plugin runs a plugin over either.
//   - zerodial-shm-proc: zerodial's Client over shared memory (the shm
//     transport, Linux), met over a unix socket.
//
// The rows over a unix socket but mux's, and shm's, run at 16B, 64KiB and
// 1MiB (unixProcSizes), the others at 16B; zerodial-tcp-unix-proc,
// zerodial-shm-proc and grpc-unix-proc have stream rows too. cpu-ns/op
// counts the caller's process alone: the child's CPU is not measured.

// childEnv names the kind a child serves ("floor-tcp", "floor-unix",
// "tcp", "mux", "shm", "netrpc-unix", "grpc-unix"), childAddrEnv the
// address it listens on, and childSizeEnv the payload a floor child echoes
// (0: it multiplies), which its raw bytes cannot say.
const (
	childEnv     = "ZERODIAL_BENCH_CHILD"
	childAddrEnv = "ZERODIAL_BENCH_CHILD_ADDR"
	childSizeEnv = "ZERODIAL_BENCH_CHILD_SIZE"
)

// unixProcSizes are the sizes of the two-process rows over a unix socket
// that the report compares: a call's, a large body's and a bulk one's.
var unixProcSizes = []size{size16, sizes[2], sizes[3]}

func init() {
	register("floor-tcp-proc", func(tb testing.TB, sz size) func() callFunc {
		return rawProc(tb, "tcp", startChild(tb, "floor-tcp", "127.0.0.1:0", sz.n))
	}, size16)
	register("floor-unix-proc", func(tb testing.TB, sz size) func() callFunc {
		return rawProc(tb, "unix", startChild(tb, "floor-unix", socketPath(tb), sz.n))
	}, unixProcSizes...)
	register("zerodial-tcp-proc", func(tb testing.TB, _ size) func() callFunc {
		return zerodialProc(tb, tcp.New(), startChild(tb, "tcp", "127.0.0.1:0", 0))
	}, size16)
	register("zerodial-tcp-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		return zerodialProc(tb, tcp.New(), startChild(tb, "tcp", "unix:"+socketPath(tb), 0))
	}, unixProcSizes...)
	register("zerodial-mux-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		return zerodialProc(tb, mux.New(), startChild(tb, "mux", "unix:"+socketPath(tb), 0))
	}, size16)
	register("zerodial-shm-proc", func(tb testing.TB, _ size) func() callFunc {
		skipUnlessLinux(tb)
		return zerodialProc(tb, shm.New(), startChild(tb, "shm", "unix:"+socketPath(tb), 0))
	}, unixProcSizes...)
	register("netrpc-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		c, err := rpc.Dial("unix", startChild(tb, "netrpc-unix", socketPath(tb), 0))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		return rpcCaller(c)
	}, unixProcSizes...)
	register("grpc-unix-proc", func(tb testing.TB, _ size) func() callFunc {
		return grpcCaller(grpcUnixProc(tb))
	}, unixProcSizes...)
	registerStream("zerodial-tcp-unix-proc", func(tb testing.TB) streamFunc {
		tr := tcp.New()
		tb.Cleanup(func() { tr.Close() })
		return dialZerodialStream(tb, tr, startChild(tb, "tcp", "unix:"+socketPath(tb), 0))
	})
	registerStream("zerodial-shm-proc", func(tb testing.TB) streamFunc {
		skipUnlessLinux(tb)
		tr := shm.New()
		tb.Cleanup(func() { tr.Close() })
		return dialZerodialStream(tb, tr, startChild(tb, "shm", "unix:"+socketPath(tb), 0))
	})
	registerStream("grpc-unix-proc", func(tb testing.TB) streamFunc {
		return grpcStream(grpcUnixProc(tb))
	})
}

// grpcUnixProc returns a ClientConn of a child's gRPC server (Arith and
// Stream) on a unix socket, through grpc-go's own "unix" resolver.
func grpcUnixProc(tb testing.TB) grpc.ClientConnInterface {
	return dialGRPC(tb, "unix://"+startChild(tb, "grpc-unix", socketPath(tb), 0))
}

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

// startChild runs a child serving kind at addr (a floor echoing n bytes,
// or multiplying if n is 0) and returns the address it listens on; the
// child ends, and is waited for, when tb does.
func startChild(tb testing.TB, kind, addr string, n int) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind, childAddrEnv+"="+addr, childSizeEnv+"="+strconv.Itoa(n))
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
// returns the exit code. n is the payload a floor echoes (0: multiply).
func serveChild(kind, addr string, n int) int {
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
				go serveRawTCP(c, n)
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
		if err := errors.Join(registerReflect(srv), registerFlow(srv)); err != nil {
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
	case "netrpc-unix", "grpc-unix":
		ln, err := net.Listen("unix", addr)
		if err != nil {
			return fail(err)
		}
		var stop func()
		if kind == "grpc-unix" {
			srv := grpc.NewServer()
			srv.RegisterService(&arithServiceDesc, grpcArith{new(Arith)})
			srv.RegisterService(&streamServiceDesc, grpcFlow{})
			go srv.Serve(ln)
			stop = srv.Stop
		} else {
			// rpc.Server.Accept logs its listener's close to the log
			// package, on the stderr the parent's benchmark lines share.
			log.SetOutput(io.Discard)
			srv := rpc.NewServer()
			if err := srv.Register(new(Arith)); err != nil {
				return fail(err)
			}
			go srv.Accept(ln)
			stop = func() { ln.Close() }
		}
		fmt.Println(ln.Addr().String())
		io.Copy(io.Discard, os.Stdin)
		stop()
		return 0
	}
	return fail(fmt.Errorf("unknown kind"))
}

// skipUnlessLinux skips the shm rows elsewhere: shared memory needs Linux.
func skipUnlessLinux(tb testing.TB) {
	if runtime.GOOS != "linux" {
		tb.Skip("shared memory needs Linux")
	}
}
