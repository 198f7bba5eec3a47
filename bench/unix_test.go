package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// The rows over a unix socket (docs/unix.md), at 16B, beside their floor,
// floor-unix (floor_test.go):
//   - zerodial-tcp-unix: zerodial-tcp's Client and Server over a unix
//     socket rather than loopback TCP;
//   - zerodial-mux-unix: zerodial-mux's, the same way.
//
// Both ends are in this process, as every other row's are.

func init() {
	register("zerodial-tcp-unix", func(tb testing.TB, _ size) func() callFunc {
		tr := tcp.New()
		tb.Cleanup(func() { tr.Close() })
		return zerodialNetwork(tb, tr, "unix:"+socketPath(tb), ends{})
	}, size16)
	register("zerodial-mux-unix", func(tb testing.TB, _ size) func() callFunc {
		tr := mux.New()
		tb.Cleanup(func() { tr.Close() })
		return zerodialNetwork(tb, tr, "unix:"+socketPath(tb), ends{})
	}, size16)
}

// socketPath returns a path for a unix socket in a short-named directory
// removed when tb ends: a socket path has at most 107 bytes, which
// tb.TempDir's, named after the benchmark, can pass.
func socketPath(tb testing.TB) string {
	dir, err := os.MkdirTemp("", "zdb")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}
