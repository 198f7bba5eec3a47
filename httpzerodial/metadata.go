package httpzerodial

import (
	"cmp"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"github.com/zerodial/transport/dispatch"
)

// protocolHeaders are the request headers that belong to HTTP or to the
// protocols connect-go speaks, never to a call's metadata.
var protocolHeaders = map[string]bool{
	"accept": true, "accept-encoding": true, "connection": true, "content-encoding": true,
	"content-length": true, "content-type": true, "host": true, "keep-alive": true,
	"proxy-authorization": true, "proxy-connection": true, "te": true, "trailer": true,
	"transfer-encoding": true, "upgrade": true, "user-agent": true, "x-user-agent": true,
	"x-grpc-web": true,
}

// reserved reports whether a header name (in lower case) is one the
// protocols use: never metadata, either way.
func reserved(name string) bool {
	return protocolHeaders[name] || strings.HasPrefix(name, "connect-") || strings.HasPrefix(name, "grpc-") ||
		strings.HasPrefix(name, "trailer-") || strings.HasPrefix(name, ":")
}

// metadataFrom returns the call's metadata from its request headers: each
// header that is not the protocol's, its name in lower case, its values
// joined by ", " (as HTTP allows a list to be folded); nil when none. The
// values of a binary header (a name ending in "-bin", gRPC's and Connect's
// rule) are decoded from base64; one that is not base64 is kept as it came.
func metadataFrom(h http.Header) dispatch.Metadata {
	var md dispatch.Metadata
	for k, vs := range h {
		name := strings.ToLower(k)
		if reserved(name) {
			continue
		}
		if md == nil {
			md = make(dispatch.Metadata)
		}
		md[name] = metadataValue(name, strings.Join(vs, ", "))
	}
	return md
}

// metadataValue is the metadata value of a header's value: a binary
// header's decoded.
func metadataValue(name, v string) string {
	if !strings.HasSuffix(name, binarySuffix) {
		return v
	}
	b, err := connect.DecodeBinaryHeader(v)
	if err != nil {
		return v
	}
	return string(b)
}

// binarySuffix ends the name of a header whose values are bytes, sent in
// base64.
const binarySuffix = "-bin"

// Reply metadata keys may say where an entry goes, in the form grpczerodial
// writes gRPC's headers and trailers (dispatch metadata holds one string a
// key): "key#t" is a trailer's entry, "key#1", "key#2", ... (and "key#t1",
// ...) further values of the key. Any other key is taken as it is.

// replyKey splits a reply metadata key into the header's name, whether it
// is a trailer's, and the value's place among the name's values.
func replyKey(k string) (name string, trailer bool, i int) {
	base, tail, found := strings.Cut(k, "#")
	if !found {
		return k, false, 0
	}
	if t, ok := strings.CutPrefix(tail, "t"); ok {
		trailer, tail = true, t
	}
	if tail == "" {
		return base, trailer, 0
	}
	n, err := strconv.Atoi(tail)
	if err != nil || n < 1 {
		return k, false, 0 // not of that form: a key as it is
	}
	return base, trailer, n
}

// setMetadata writes reply metadata into response headers, and its
// trailer's entries (replyKey) into trailer. A key that is not a valid
// header name, or that the protocols reserve, and a value that a header
// cannot carry, are left out: writing them would break the response. A
// binary header's value (a name ending in "-bin") is written in base64.
// skip, when not nil, leaves out the entries it reports, those sent
// already.
func setMetadata(header, trailer http.Header, md dispatch.Metadata, skip func(key, value string) bool) {
	type entry struct {
		h    http.Header
		name string
		i    int
		v    string
	}
	var many []entry // keys of several values, set in order below
	for k, v := range md {
		if skip != nil && skip(k, v) {
			continue
		}
		name, tr, i := replyKey(k)
		lower := strings.ToLower(name)
		if !validName(name) || reserved(lower) {
			continue
		}
		if strings.HasSuffix(lower, binarySuffix) {
			v = connect.EncodeBinaryHeader([]byte(v))
		} else if !validValue(v) {
			continue
		}
		h := header
		if tr {
			h = trailer
		}
		if h == nil {
			continue
		}
		if name == k {
			h.Set(k, v)
			continue
		}
		many = append(many, entry{h, name, i, v})
	}
	slices.SortFunc(many, func(a, b entry) int { return cmp.Compare(a.i, b.i) })
	for _, e := range many {
		if e.i == 0 {
			e.h.Set(e.name, e.v)
		} else {
			e.h.Add(e.name, e.v)
		}
	}
}

// validName reports whether k is an HTTP field name (RFC 9110's token).
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validValue reports whether v can be an HTTP field value: no control
// characters but tab.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// peer is what the http.Request says of the call's connection, which
// connect-go's handlers do not pass on: it travels in the request's
// context.
type peer struct {
	local, remote net.Addr
	tls           *tls.ConnectionState
}

type peerKey struct{}

// withPeer returns r's context with the description of its connection.
func withPeer(r *http.Request) context.Context {
	p := &peer{remote: addrOf(r.RemoteAddr), tls: r.TLS}
	p.local, _ = r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return context.WithValue(r.Context(), peerKey{}, p)
}

// incomingCall describes a call of name whose request context is ctx and
// whose request headers are h (nil: no metadata), for the Server's Invoke
// and InvokeStream.
func incomingCall(ctx context.Context, name string, h http.Header) dispatch.IncomingCall {
	ci := dispatch.CallInfo{Method: name, Path: dispatch.PathHTTP}
	if p, ok := ctx.Value(peerKey{}).(*peer); ok {
		ci.LocalAddr, ci.RemoteAddr, ci.TLS = p.local, p.remote, p.tls
	}
	return dispatch.IncomingCall{Info: ci, Metadata: metadataFrom(h)}
}

// addrOf returns http.Request's RemoteAddr as a net.Addr: a *net.TCPAddr
// when it is "ip:port", as it is over TCP.
func addrOf(s string) net.Addr {
	if s == "" {
		return nil
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return net.TCPAddrFromAddrPort(ap)
	}
	return remoteAddr(s)
}

// remoteAddr is a RemoteAddr that is not "ip:port" (a Unix socket's, say).
type remoteAddr string

func (a remoteAddr) Network() string { return "http" }
func (a remoteAddr) String() string  { return string(a) }
