package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

// wireConn speaks the zerodial wire, over tcp or mux.
type wireConn struct {
	c  *dispatch.Client
	tr transport.Transport
	md dispatch.Metadata
}

// dialWire connects to o.addr over o.transport.
func dialWire(ctx context.Context, o *options, cfg *tls.Config) (*wireConn, error) {
	var tr transport.Transport
	if o.transport == "tcp" {
		tr = tcp.New(tcp.WithTLS(cfg))
	} else {
		tr = mux.New(mux.WithTLS(cfg))
	}
	c, err := dispatch.Dial(ctx, tr, o.addr, dispatch.WithShortcut(dispatch.ShortcutOff))
	if err != nil {
		tr.Close()
		var e *dispatch.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &e) {
			return nil, err
		}
		return nil, &failure{exitTransport, fmt.Sprintf("zerodial: cannot connect to %s over %s: %v", o.addr, o.transport, err)}
	}
	w := &wireConn{c: c, tr: tr}
	if len(o.headers) > 0 {
		w.md = dispatch.Metadata{}
		for _, h := range o.headers {
			w.md[h[0]] = h[1]
		}
	}
	return w, nil
}

func (w *wireConn) ctx(ctx context.Context) context.Context {
	if w.md != nil {
		return dispatch.WithMetadata(ctx, w.md)
	}
	return ctx
}

func (w *wireConn) call(ctx context.Context, method string, args json.RawMessage) (json.RawMessage, error) {
	v, err := fromJSON(args)
	if err != nil {
		return nil, usageErr("zerodial: the arguments are not JSON: %v", err)
	}
	if v, err = w.base64Args(ctx, method, v); err != nil {
		return nil, bytesErr(err)
	}
	var reply codec.Raw // the body as it came, decoded below without its type
	if err := w.c.Call(w.ctx(ctx), method, v, &reply); err != nil {
		return nil, err
	}
	out, err := toJSON(reply)
	if err != nil {
		return nil, &failure{exitServer, "zerodial: " + err.Error()}
	}
	return out, nil
}

func (w *wireConn) stream(ctx context.Context, method string, args json.RawMessage, each func(json.RawMessage) error) error {
	v, err := fromJSON(args)
	if err != nil {
		return usageErr("zerodial: the arguments are not JSON: %v", err)
	}
	if v, err = w.base64Args(ctx, method, v); err != nil {
		return bytesErr(err)
	}
	for m, err := range dispatch.CallStream[any, codec.Raw](w.ctx(ctx), w.c, method, &v) {
		if err != nil {
			return err
		}
		out, err := toJSON(*m)
		if err != nil {
			return &failure{exitServer, "zerodial: " + err.Error()}
		}
		if err := each(out); err != nil {
			return &failure{exitTransport, "zerodial: cannot write: " + err.Error()}
		}
	}
	return nil
}

func (w *wireConn) close() {
	w.c.Close()
	w.tr.Close()
}
