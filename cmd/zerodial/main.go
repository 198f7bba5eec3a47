package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"
)

// The exit codes, documented in the package doc.
const (
	exitOK        = 0
	exitServer    = 1
	exitUsage     = 2
	exitTransport = 3
	exitDeadline  = 4
	// exitInterrupted is the shell's code for a command ended by SIGINT.
	exitInterrupted = 130
)

func main() {
	// net/http's client logs through the log package what it cannot
	// report as an error — "Unsolicited response received on idle HTTP
	// channel" when a URL names a port that speaks zerodial's wire, whose
	// listener greets first. The command says what went wrong in its own
	// words, on one line; nothing else of it logs.
	log.SetOutput(io.Discard)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usage is printed for a command line that names no command.
const usage = `usage:
  zerodial call   [flags] ADDR Service.Method [JSON]
  zerodial stream [flags] ADDR Service.Method [JSON]
  zerodial list   [flags] ADDR
  zerodial health [flags] ADDR [SERVICE]
"zerodial COMMAND -h" lists the flags; "go doc github.com/zerodial/transport/cmd/zerodial" says more.`

// options are a command's flags and operands.
type options struct {
	transport  string
	tls        bool
	cacert     string
	cert, key  string
	serverName string
	timeout    time.Duration
	headers    headerFlag
	describe   string

	addr string
	args []string // the operands after ADDR
}

// headerFlag collects -H key:value, repeatable.
type headerFlag [][2]string

func (h *headerFlag) String() string { return fmt.Sprint(*h) }

func (h *headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("want key:value, got %q", s)
	}
	*h = append(*h, [2]string{k, strings.TrimSpace(v)})
	return nil
}

// failure is an error with its exit code, printed as it is.
type failure struct {
	code int
	msg  string
}

func (f *failure) Error() string { return f.msg }

func usageErr(format string, a ...any) error {
	return &failure{exitUsage, fmt.Sprintf(format, a...)}
}

// run runs the command line args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	cmd := args[0]
	operands := map[string][2]int{ // the operands after ADDR: at least, at most
		"call": {1, 2}, "stream": {1, 2}, "list": {0, 0}, "health": {0, 1},
	}
	n, ok := operands[cmd]
	if !ok {
		if cmd == "-h" || cmd == "-help" || cmd == "--help" || cmd == "help" {
			fmt.Fprintln(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "zerodial: unknown command %q\n%s\n", cmd, usage)
		return exitUsage
	}
	o, err := parse(cmd, args[1:], stdout, n[0], n[1])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return report(stderr, err)
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx := sigCtx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	err = runCommand(ctx, cmd, o, stdout)
	if err != nil && sigCtx.Err() != nil {
		return exitInterrupted // interrupted, as the user asked: nothing to say
	}
	return report(stderr, err)
}

// parse parses a command's flags and operands: ADDR, then between least and
// most more.
func parse(cmd string, args []string, stdout io.Writer, least, most int) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("zerodial "+cmd, flag.ContinueOnError)
	// The flag package's errors are returned, to be printed as one line;
	// -h prints the flags on stdout, as asked.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // the flag package calls it for every error too
	fs.StringVar(&o.transport, "transport", "", "the path: tcp, mux or http (mux, or http for a URL)")
	fs.BoolVar(&o.tls, "tls", false, "speak TLS")
	fs.StringVar(&o.cacert, "cacert", "", "PEM `file` of the certificates to trust (implies -tls)")
	fs.StringVar(&o.cert, "cert", "", "PEM `file` of a client certificate, for mutual TLS (with -key)")
	fs.StringVar(&o.key, "key", "", "PEM `file` of the client certificate's key")
	fs.StringVar(&o.serverName, "servername", "", "the `name` the server's certificate must have (the host by default)")
	timeout := 10 * time.Second
	if cmd == "stream" {
		timeout = 0 // a stream is followed until it ends, or until interrupted
	}
	fs.DurationVar(&o.timeout, "timeout", timeout, "bound on the whole command (0: none)")
	fs.Var(&o.headers, "H", "metadata `key:value` of the call (repeatable)")
	fs.StringVar(&o.describe, "describe", "/describe", "the `path` of httpzerodial.Describe, for list")
	// Flags may come between the operands too ("call ADDR M -H k:v"), as
	// they do after a command in go's own; "--" ends them.
	var rest []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(stdout, "usage: zerodial %s [flags] %s\n", cmd, operandsWanted(cmd))
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return nil, err
			}
			return nil, usageErr("zerodial %s: %v (\"zerodial %s -h\" lists the flags)", cmd, err, cmd)
		}
		left := fs.Args()
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			rest = append(rest, left...)
			break
		}
		if len(left) > 0 {
			rest = append(rest, left[0])
			left = left[1:]
		}
		args = left
	}
	if len(rest) < 1+least || len(rest) > 1+most {
		return nil, usageErr("zerodial %s: want %s, got %d operands", cmd, operandsWanted(cmd), len(rest))
	}
	o.addr, o.args = rest[0], rest[1:]
	if err := o.pickTransport(); err != nil {
		return nil, err
	}
	return o, nil
}

func operandsWanted(cmd string) string {
	switch cmd {
	case "call", "stream":
		return "ADDR Service.Method [JSON]"
	case "health":
		return "ADDR [SERVICE]"
	}
	return "ADDR"
}

// pickTransport checks -transport against ADDR, inferring http from a URL.
func (o *options) pickTransport() error {
	isURL := strings.HasPrefix(o.addr, "http://") || strings.HasPrefix(o.addr, "https://")
	switch o.transport {
	case "":
		o.transport = "mux"
		if isURL {
			o.transport = "http"
		}
	case "tcp", "mux":
		if isURL {
			return usageErr("zerodial: -transport %s takes host:port, not the URL %q", o.transport, o.addr)
		}
	case "http":
		if !isURL {
			o.addr = "http://" + o.addr
			if o.tls || o.cacert != "" || o.cert != "" {
				o.addr = "https://" + strings.TrimPrefix(o.addr, "http://")
			}
		}
	default:
		return usageErr("zerodial: -transport is tcp, mux or http, not %q", o.transport)
	}
	if (o.cert == "") != (o.key == "") {
		return usageErr("zerodial: -cert and -key go together (mutual TLS)")
	}
	if strings.HasPrefix(o.addr, "http://") && (o.tls || o.cacert != "" || o.cert != "") {
		return usageErr("zerodial: TLS flags with the http:// URL %q: use https://", o.addr)
	}
	return nil
}

// conn is a connection to a server on one path, which speaks JSON.
type conn interface {
	// call calls method with args and returns its reply.
	call(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error)
	// stream calls the server-streaming method with args and hands each
	// message to each.
	stream(ctx context.Context, method string, args json.RawMessage, each func(json.RawMessage) error) error
	close()
}

// runCommand runs cmd.
func runCommand(ctx context.Context, cmd string, o *options, stdout io.Writer) error {
	var method string
	args := json.RawMessage("{}")
	switch cmd {
	case "call", "stream":
		method = o.args[0]
		if i := strings.LastIndex(method, "."); i <= 0 || i == len(method)-1 {
			return usageErr("zerodial: method %q is not Service.Method", method)
		}
		if len(o.args) == 2 {
			args = json.RawMessage(o.args[1])
		}
		if err := checkJSON(args); err != nil {
			return usageErr("zerodial: the arguments are not JSON: %v", err)
		}
	case "health":
		service := ""
		if len(o.args) == 1 {
			service = o.args[0]
		}
		args, _ = json.Marshal(map[string]string{"Service": service})
	}
	c, err := dial(ctx, o)
	if err != nil {
		return err
	}
	defer c.close()
	switch cmd {
	case "call":
		reply, err := c.call(ctx, method, args)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", reply)
		return err
	case "stream":
		return c.stream(ctx, method, args, func(m json.RawMessage) error {
			_, err := fmt.Fprintf(stdout, "%s\n", m)
			return err
		})
	case "health":
		reply, err := c.call(ctx, "Health.Check", args)
		if err != nil {
			return err
		}
		var r struct{ Status string }
		if err := json.Unmarshal(reply, &r); err != nil || r.Status == "" {
			return &failure{exitServer, fmt.Sprintf("zerodial: Health.Check answered %s, not a status", reply)}
		}
		fmt.Fprintln(stdout, r.Status)
		if r.Status != "SERVING" {
			return &failure{exitServer, ""}
		}
		return nil
	case "list":
		var d *description
		switch c := c.(type) {
		case *httpConn:
			d, err = listHTTP(ctx, c, o.describe)
		case *wireConn:
			d, err = listWire(ctx, c)
		}
		if err != nil {
			return err
		}
		return printList(d, stdout)
	}
	return nil
}

// dial connects to o.addr on o's path.
func dial(ctx context.Context, o *options) (conn, error) {
	cfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	if o.transport == "http" {
		return newHTTPConn(ctx, o, cfg)
	}
	return dialWire(ctx, o, cfg)
}

// checkJSON checks that data is one JSON value.
func checkJSON(data []byte) error {
	_, err := fromJSON(data)
	return err
}
