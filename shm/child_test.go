package shm_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/shm"
)

// The two-process tests run this test binary again as a child, which
// serves one kind of peer (serveChild) on an abstract unix name, writes
// its address and what it has done to stdout, one line each, and ends
// when its stdin does — or when the test kills it.
const childEnv = "ZERODIAL_SHM_TEST_CHILD"

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
	addr  string
}

// startChild runs a child serving kind, and waits for its address. The
// child is killed and waited for when t ends, if it has not been already.
func startChild(t *testing.T, kind string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+kind)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill() // ends it if closing its stdin has not
		cmd.Wait()
	})
	c := &child{cmd: cmd, lines: bufio.NewScanner(stdout)}
	c.addr = c.next(t)
	return c
}

// next returns the child's next line of output.
func (c *child) next(t *testing.T) string {
	t.Helper()
	if !c.lines.Scan() {
		t.Fatalf("the child ended: %v", c.lines.Err())
	}
	return strings.TrimSpace(c.lines.Text())
}

// kill kills the child, as a crash would (SIGKILL: it closes nothing
// itself), and waits for its end.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// serveChild is a child's whole life: it listens, writes its address,
// serves kind, and returns the exit code.
//   - "stall": accepts one connection, receives one message, says "got",
//     and then reads nothing more, until stdin ends.
//   - "echo": sends back every message of every connection.
func serveChild(kind string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "shm test child %s: %v\n", kind, err)
		return 1
	}
	tr := shm.New()
	defer tr.Close()
	l, err := tr.Listen("")
	if err != nil {
		return fail(err)
	}
	defer l.Close()
	fmt.Println(l.Addr().String())
	switch kind {
	case "stall":
		s, err := l.Accept()
		if err != nil {
			return fail(err)
		}
		defer s.Close()
		var m transport.Message
		if err := s.Recv(&m); err != nil {
			return fail(err)
		}
		fmt.Println("got")
	case "echo":
		go func() {
			for {
				s, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer s.Close()
					var m transport.Message
					for s.Recv(&m) == nil && s.Send(&m) == nil {
					}
				}()
			}
		}()
	default:
		return fail(fmt.Errorf("unknown kind"))
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// dialChild dials c's listener with tr, bounded by a hang guard.
func dialChild(t *testing.T, tr transport.Transport, c *child) transport.Socket {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s, err := tr.Dial(ctx, c.addr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
