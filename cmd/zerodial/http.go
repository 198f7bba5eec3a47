package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/httpzerodial"
	"github.com/zerodial/transport/internal/preface"
)

// maxBody bounds a description read over HTTP, so that a server cannot
// make the command allocate without limit. Replies and stream messages
// are bounded by httpzerodial's Client, as zerodial's wire bounds a frame.
const maxBody = 64 << 20

// httpConn calls a Server served by httpzerodial: its calls and streams
// go through httpzerodial.Dial's Client, in JSON, which the server decodes
// with encoding/json; list reads httpzerodial.Describe with the same
// http.Client. That client speaks HTTP/1.1, which every HTTP server and
// proxy takes: a server stream goes over it as one request, the
// arguments sent and the side closed before the messages come.
type httpConn struct {
	c      *dispatch.Client
	base   string // the URL, without a trailing slash
	client *http.Client
	header http.Header       // -H, as list's request headers
	md     dispatch.Metadata // -H, as the metadata of a call or stream
	tls    *tls.Config
}

func newHTTPConn(ctx context.Context, o *options, cfg *tls.Config) (*httpConn, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	t.ForceAttemptHTTP2 = false
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	hc := &http.Client{Transport: t}
	base := strings.TrimSuffix(o.addr, "/")
	c, err := httpzerodial.Dial(ctx, base, httpzerodial.WithJSON(), httpzerodial.WithHTTPClient(hc))
	if err != nil {
		return nil, usageErr("zerodial: %v", err)
	}
	h := &httpConn{c: c, base: base, client: hc, header: http.Header{}, tls: cfg}
	for _, kv := range o.headers {
		h.header.Add(kv[0], kv[1])
		if h.md == nil {
			h.md = dispatch.Metadata{}
		}
		h.md[kv[0]] = kv[1]
	}
	return h, nil
}

func (h *httpConn) close() {
	h.c.Close()
	h.client.CloseIdleConnections()
}

func (h *httpConn) ctx(ctx context.Context) context.Context {
	if h.md != nil {
		return dispatch.WithMetadata(ctx, h.md)
	}
	return ctx
}

// callErr is the error of a call or stream through the Client: the
// server's answer as it is, a failure to reach the server as doErr says it.
func (h *httpConn) callErr(ctx context.Context, err error) error {
	var e *dispatch.Error
	if errors.As(err, &e) {
		return err
	}
	return h.doErr(ctx, err)
}

// doErr is transportErr for a request that got no answer: a server that
// speaks zerodial's wire on that port, not HTTP, is named, with the way to
// call it (it hangs up on an HTTP request, which reads as a bare EOF).
func (h *httpConn) doErr(ctx context.Context, err error) error {
	e := transportErr(ctx, err)
	if _, deadline := e.(*dispatch.Error); deadline {
		return e
	}
	hostport, proto := h.zerodialAt(ctx)
	if proto == "" {
		return e
	}
	return &failure{exitTransport, fmt.Sprintf("zerodial: %s speaks zerodial's %s wire, not HTTP: give %s (with -transport %s) rather than the URL (%v)",
		hostport, proto, hostport, proto, err)}
}

// probeTimeout bounds doErr's look at the port when the caller's context
// has no deadline.
const probeTimeout = 5 * time.Second

// zerodialAt returns the host:port of h's URL and, when the server there
// speaks zerodial's wire, the protocol ("tcp", "mux"): a zerodial listener
// sends its preface as soon as it takes a connection (after TLS, for
// https), where an HTTP server waits for a request. It sends nothing.
func (h *httpConn) zerodialAt(ctx context.Context) (hostport, proto string) {
	u, err := url.Parse(h.base)
	if err != nil || u.Host == "" {
		return "", ""
	}
	hostport = u.Host
	if u.Port() == "" {
		hostport = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return hostport, ""
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if u.Scheme == "https" {
		cfg := h.tls.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(c, cfg)
		if tc.HandshakeContext(ctx) != nil {
			return hostport, ""
		}
		c = tc
	}
	buf := make([]byte, preface.Len)
	if _, err := io.ReadFull(c, buf); err != nil {
		return hostport, ""
	}
	p, err := preface.Parse(buf)
	if err != nil || p.Protocol != preface.TCP && p.Protocol != preface.Mux {
		return hostport, ""
	}
	return hostport, preface.ProtocolName(p.Protocol)
}

// transportErr is err, a failure to reach the server or to read from it,
// as the deadline when that is what ended it.
func transportErr(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return &dispatch.Error{Code: dispatch.CodeDeadlineExceeded, Message: "deadline exceeded"}
	}
	return &failure{exitTransport, "zerodial: " + err.Error()}
}

func (h *httpConn) call(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
	var reply json.RawMessage
	if err := h.c.Call(h.ctx(ctx), method, args, &reply); err != nil {
		return nil, h.callErr(ctx, err)
	}
	return compactJSON(reply, "the reply")
}

func (h *httpConn) stream(ctx context.Context, method string, args json.RawMessage, each func(json.RawMessage) error) error {
	for m, err := range dispatch.CallStream[json.RawMessage, json.RawMessage](h.ctx(ctx), h.c, method, &args) {
		if err != nil {
			return h.callErr(ctx, err)
		}
		out, err := compactJSON(*m, "a stream message")
		if err != nil {
			return err
		}
		if err := each(out); err != nil {
			return &failure{exitTransport, "zerodial: cannot write: " + err.Error()}
		}
	}
	return nil
}

// compactJSON returns a reply or message (what) on one line.
func compactJSON(data []byte, what string) (json.RawMessage, error) {
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return nil, &failure{exitServer, fmt.Sprintf("zerodial: %s is not JSON: %v", what, err)}
	}
	return out.Bytes(), nil
}

// readBounded reads r to its end, refusing more than maxBody bytes.
func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err == nil && len(b) > maxBody {
		err = fmt.Errorf("reply larger than %d bytes", maxBody)
	}
	return b, err
}
