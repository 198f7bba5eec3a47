package unixsock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// probeTimeout bounds the dial that tells a live listener from a dead
// one's file. A listener of this host answers a connect at once, or
// refuses it at once when its backlog is full; the bound is a hang guard.
const probeTimeout = 5 * time.Second

// maxPatternTries bounds the names a pattern is tried with, as
// os.CreateTemp's.
const maxPatternTries = 10000

// Listen binds the socket path of a unix address. A path whose last
// element holds a "*" is a pattern: the last "*" is replaced by a random
// number, tried again on a name taken, as os.CreateTemp does, so that
// Listen picks a free path (as port 0 does for TCP); Addr reports it.
//
// A path taken by a socket file is looked at: when a listener accepts
// there, Listen fails and says so; when nobody does (its process died
// without removing it), the file is removed and Listen binds it. A file
// that is not a socket is never removed. Two processes replacing the same
// stale file at once race as any remove-then-bind does; one of them may
// end with its file taken over. Abstract paths ("@name", Linux) have no
// file.
//
// Close removes the file, unless another listener replaced it meanwhile.
func Listen(path string) (net.Listener, error) {
	if strings.Contains(lastElem(path), "*") {
		return listenPattern(path)
	}
	ul, err := bind(path)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) || abstract(path) {
		return wrapListener(ul, path, err)
	}
	if err := checkStale(path); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, pathErr("listen", path, err)
	}
	ul, err = bind(path)
	return wrapListener(ul, path, err)
}

func lastElem(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func abstract(path string) bool { return strings.HasPrefix(path, "@") }

func listenPattern(pattern string) (net.Listener, error) {
	i := strings.LastIndexByte(pattern, '*')
	for range maxPatternTries {
		path := pattern[:i] + strconv.FormatUint(uint64(rand.Uint32()), 10) + pattern[i+1:]
		ul, err := bind(path)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return wrapListener(ul, path, err)
		}
	}
	return nil, pathErr("listen", pattern, errors.New("no free name found for the pattern"))
}

func bind(path string) (*net.UnixListener, error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	return l, tooLong(path, err)
}

// checkStale looks at the socket file at path, which bind found taken: nil
// when nobody listens there, an error saying why it is not to be replaced
// otherwise.
func checkStale(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		return pathErr("listen", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return pathErr("listen", path, errNotSocket)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	switch {
	case err == nil:
		c.Close()
		return liveErr(path)
	case Absent(err):
		return nil
	case errors.Is(err, syscall.EAGAIN):
		// Its backlog is full: somebody listens, and is busy.
		return liveErr(path)
	}
	return pathErr("listen", path, err)
}

// liveErr refuses a path another listener owns. It matches
// syscall.EADDRINUSE, as a TCP port's would.
func liveErr(path string) error {
	return fmt.Errorf("unix socket listen %s: %w: a live listener accepts connections there "+
		"(close it first, or choose another path)", path, syscall.EADDRINUSE)
}

func wrapListener(ul *net.UnixListener, path string, err error) (net.Listener, error) {
	if err != nil {
		return nil, err
	}
	l := &listener{ul: ul, addr: AddrOf(path)}
	if !abstract(path) {
		// The file is removed by Close, once Close has checked it is
		// still this listener's: net's own removal would remove a file
		// another listener had put in its place.
		ul.SetUnlinkOnClose(false)
		l.file, _ = os.Lstat(path)
	}
	return l, nil
}

// listener is a unix net.Listener whose Accept returns *Conns and whose
// Addr is an Addr.
type listener struct {
	ul   *net.UnixListener
	addr Addr
	file fs.FileInfo // the socket file bound, nil for an abstract path

	once sync.Once
	err  error
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.ul.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return newConn(c, addrOf(c.RemoteAddr())), nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// Close stops listening and removes the socket file, if it is still the
// one this listener bound.
func (l *listener) Close() error {
	l.once.Do(func() {
		l.err = l.ul.Close()
		if l.file == nil {
			return
		}
		if fi, err := os.Lstat(l.addr.path); err == nil && os.SameFile(fi, l.file) {
			os.Remove(l.addr.path)
		}
	})
	return l.err
}
