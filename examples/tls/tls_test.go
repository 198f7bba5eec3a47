package tlsexample_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTwoProcesses builds the server and the client as the package doc
// runs them, starts the server as a child process, and runs the client
// twice: with the server's certificate as its CA the call succeeds over
// TLS (the server logs its TLS version); without it the client fails the
// handshake in x509's words and exits with status 1.
func TestTwoProcesses(t *testing.T) {
	// A hang guard only: building and the calls take seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	server, client := filepath.Join(dir, "server"), filepath.Join(dir, "client")
	for bin, pkg := range map[string]string{server: "./server", client: "./client"} {
		out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	caFile := filepath.Join(dir, "ca.pem")

	srv := exec.CommandContext(ctx, server, "-addr", "127.0.0.1:0", "-ca", caFile)
	var srvErr bytes.Buffer
	srv.Stderr = &srvErr
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() error {
		stopped = true
		if runtime.GOOS == "windows" {
			srv.Process.Kill()
		} else {
			srv.Process.Signal(os.Interrupt) // a graceful Shutdown
		}
		io.Copy(io.Discard, stdout)
		return srv.Wait()
	}
	defer func() {
		if !stopped {
			stop()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the server printed no address: %v; its stderr:\n%s", err, srvErr.String())
	}
	// "listening on 127.0.0.1:PORT, with the certificate in ...".
	addr, _, ok := strings.Cut(strings.TrimPrefix(line, "listening on "), ",")
	if !ok {
		t.Fatalf("the server printed %q, want its address", line)
	}

	runClient := func(args ...string) (stdout, stderr string, err error) {
		var out, errOut bytes.Buffer
		c := exec.CommandContext(ctx, client, append([]string{"-addr", addr}, args...)...)
		c.Stdout, c.Stderr = &out, &errOut
		err = c.Run()
		return out.String(), errOut.String(), err
	}

	t.Run("trusting the server's certificate", func(t *testing.T) {
		out, errOut, err := runClient("-ca", caFile)
		if err != nil {
			t.Fatalf("client: %v\n%s", err, errOut)
		}
		if out != "6 × 7 = 42\n" {
			t.Errorf("client printed %q, want %q", out, "6 × 7 = 42\n")
		}
	})
	t.Run("without the CA", func(t *testing.T) {
		out, errOut, err := runClient()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("client: %v, want exit status 1; it printed %q", err, out)
		}
		for _, want := range []string{"tls handshake with " + addr, "x509: certificate signed by unknown authority"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("client's error %q does not say %q", errOut, want)
			}
		}
	})

	if err := stop(); err != nil {
		t.Fatalf("server: %v\n%s", err, srvErr.String())
	}
	if !strings.Contains(srvErr.String(), `method=Arith.Multiply`) || !strings.Contains(srvErr.String(), `tls="TLS 1.3"`) {
		t.Errorf("the server's log has no call over TLS 1.3:\n%s", srvErr.String())
	}
}
