package dispatch

import (
	"context"
	"crypto/tls"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/rpcwire"
)

// TestRequestKeys: a call described with every field of callDesc set goes
// over the wire and is read back as it was described, and the headers it
// takes, a stream's opening frame's included, are requestKeys' — which
// fixedEntries counts, for the shortcut's checks of the header entries'
// limit. A field added to callDesc fails here until it is set below, and
// then until the wire carries it, under a key of requestKeys.
func TestRequestKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		peer := &connInfo{srv: &Server{}, path: "tcp"}
		sent := callDesc{
			name:     "Calc.Add",
			md:       Metadata{"k": "v", "k2": "v2"},
			deadline: time.Now().Add(time.Hour),
			peer:     peer,
		}
		v := reflect.ValueOf(sent)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("callDesc.%s is not set in this test: set it, and carry it on the wire", v.Type().Field(i).Name)
			}
		}

		h := map[string]string{}
		requestHeader(h, &sent, "1", "json")
		openHeader(h, DefaultStreamWindow, true)
		for k := range h {
			if !strings.HasPrefix(k, rpcwire.MetadataPrefix) && !slices.Contains(requestKeys[:], k) {
				t.Errorf("header %s is not one of requestKeys, which fixedEntries counts", k)
			}
		}
		if n := len(h) - len(sent.md); n > fixedEntries {
			t.Errorf("%d headers besides the metadata; fixedEntries is %d", n, fixedEntries)
		}

		rh := readHeader(h)
		if ctype, _ := rh.get(rpcwire.ContentType); ctype != "json" {
			t.Errorf("Content-Type %q, want json", ctype)
		}
		got, timeout, e := rh.desc(peer)
		if e != nil {
			t.Fatal(e)
		}
		if timeout != time.Hour {
			t.Errorf("timeout %v, want %v", timeout, time.Hour)
		}
		if !got.deadline.Equal(sent.deadline) {
			t.Errorf("deadline %v, want %v", got.deadline, sent.deadline)
		}
		got.deadline = sent.deadline
		if !reflect.DeepEqual(got, sent) {
			t.Errorf("read back %+v, sent %+v", got, sent)
		}
	})
}

// TestCallDescInfo: a handler's CallInfo is its call's description, on
// every path, whatever the peer.
func TestCallDescInfo(t *testing.T) {
	st := &tls.ConnectionState{ServerName: "x"}
	cred := &transport.PeerCred{UID: 1}
	d := callDesc{name: "Calc.Add", peer: &connInfo{path: "tcp", local: ShortcutAddr, peer: ShortcutAddr, tls: st, cred: cred}}
	want := CallInfo{Method: "Calc.Add", Path: "tcp", LocalAddr: ShortcutAddr, RemoteAddr: ShortcutAddr, TLS: st, PeerCred: cred}
	if got := *d.info(); !reflect.DeepEqual(got, want) {
		t.Errorf("info %+v, want %+v", got, want)
	}
	ctx, cancel := context.WithTimeout(WithMetadata(context.Background(), Metadata{}), time.Hour)
	defer cancel()
	var out callDesc
	out.fromContext(ctx, "Calc.Add")
	dl, _ := ctx.Deadline()
	if out.md != nil || !out.deadline.Equal(dl) || out.name != "Calc.Add" || out.peer != nil {
		t.Errorf("fromContext: %+v", out)
	}
}
