package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/internal/preface"
)

// maxBody bounds a reply or a stream message read over HTTP, so that a
// server cannot make the command allocate without limit.
const maxBody = 64 << 20

// httpConn speaks the Connect protocol to a Server served by httpzerodial:
// a unary call is a POST of JSON to /Service/Method; a server stream is a
// POST of enveloped JSON (application/connect+json) answered by enveloped
// messages and an end-of-stream message that carries the error.
type httpConn struct {
	base   string // the URL, without a trailing slash
	client *http.Client
	header http.Header
	tls    *tls.Config
}

func newHTTPConn(o *options, cfg *tls.Config) (*httpConn, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	h := http.Header{}
	for _, kv := range o.headers {
		h.Add(kv[0], kv[1])
	}
	return &httpConn{base: strings.TrimSuffix(o.addr, "/"), client: &http.Client{Transport: t}, header: h, tls: cfg}, nil
}

func (h *httpConn) close() { h.client.CloseIdleConnections() }

// post sends body to method's path with the Connect protocol's headers.
func (h *httpConn) post(ctx context.Context, method, contentType string, body []byte) (*http.Response, error) {
	dot := strings.LastIndex(method, ".")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/"+method[:dot]+"/"+method[dot+1:], bytes.NewReader(body))
	if err != nil {
		return nil, usageErr("zerodial: %v", err)
	}
	for k, v := range h.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	if d, ok := ctx.Deadline(); ok {
		ms := max(time.Until(d).Milliseconds(), 1)
		req.Header.Set("Connect-Timeout-Ms", strconv.FormatInt(ms, 10))
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, h.doErr(ctx, err)
	}
	return resp, nil
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
	resp, err := h.post(ctx, method, "application/json", args)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body)
	if err != nil {
		return nil, transportErr(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, connectError(resp, body)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, body); err != nil {
		return nil, &failure{exitServer, fmt.Sprintf("zerodial: the reply is not JSON: %v", err)}
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

// wireError is the Connect protocol's error: a unary call's body, a
// stream's end message's "error".
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// connectError is the error of a unary call answered with a status other
// than 200: the Connect error in its body, or else the code the Connect
// protocol gives the HTTP status.
func connectError(resp *http.Response, body []byte) error {
	var e wireError
	if json.Unmarshal(body, &e) == nil && e.Code != "" {
		return &dispatch.Error{Code: dispatch.Code(e.Code), Message: e.Message}
	}
	code := dispatch.CodeUnknown
	switch resp.StatusCode {
	case http.StatusBadRequest:
		code = dispatch.CodeInternal
	case http.StatusUnauthorized:
		code = dispatch.CodeUnauthenticated
	case http.StatusForbidden:
		code = dispatch.CodePermissionDenied
	case http.StatusNotFound:
		code = dispatch.CodeUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		code = dispatch.CodeUnavailable
	}
	msg := "HTTP " + resp.Status
	if len(body) > 0 && len(body) < 200 {
		msg += ": " + string(body)
	}
	return &dispatch.Error{Code: code, Message: msg}
}

func (h *httpConn) stream(ctx context.Context, method string, args json.RawMessage, each func(json.RawMessage) error) error {
	env := make([]byte, 5, 5+len(args))
	binary.BigEndian.PutUint32(env[1:], uint32(len(args)))
	resp, err := h.post(ctx, method, "application/connect+json", append(env, args...))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := readBounded(resp.Body)
		return connectError(resp, body)
	}
	var head [5]byte
	for {
		if _, err := io.ReadFull(resp.Body, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended without its end message")
			}
			return transportErr(ctx, err)
		}
		n := binary.BigEndian.Uint32(head[1:])
		if n > maxBody {
			return &failure{exitTransport, fmt.Sprintf("zerodial: a stream message of %d bytes, over the limit of %d", n, maxBody)}
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, msg); err != nil {
			return transportErr(ctx, err)
		}
		if head[0]&1 != 0 {
			return &failure{exitTransport, "zerodial: a compressed stream message, which was not asked for"}
		}
		if head[0]&2 != 0 { // the end of the stream
			var end struct {
				Error *wireError `json:"error"`
			}
			if err := json.Unmarshal(msg, &end); err != nil {
				return &failure{exitTransport, fmt.Sprintf("zerodial: the stream's end message is not JSON: %v", err)}
			}
			if end.Error != nil {
				return &dispatch.Error{Code: dispatch.Code(end.Error.Code), Message: end.Error.Message}
			}
			return nil
		}
		var out bytes.Buffer
		if err := json.Compact(&out, msg); err != nil {
			return &failure{exitServer, fmt.Sprintf("zerodial: a stream message is not JSON: %v", err)}
		}
		if err := each(out.Bytes()); err != nil {
			return &failure{exitTransport, "zerodial: cannot write: " + err.Error()}
		}
	}
}
