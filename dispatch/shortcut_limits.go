package dispatch

import (
	"context"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
	"github.com/zerodial/transport/internal/rpcwire"
)

// replyHeadersCheck applies to a direct call's reply r with metadata md, or
// to its error reply e, what the network would, as far as it is not the
// body's to decide: a reply whose headers alone are over a frame limit, or
// have too many entries, fails as it would on the network, in the same
// words — for which r is encoded then, as the network would encode it. It
// returns e when the reply goes. Reply metadata far from the limits, the
// common case, builds nothing.
func (c *Client) replyHeadersCheck(ent *entry, name string, r any, md Metadata, e *Error, ans *answer) error {
	server := ent.limit
	if server <= 0 {
		server = c.limit
	}
	if e != nil {
		return c.errorReplyCheck(name, md, e, server, ans)
	}
	if len(md)+fixedEntries <= frame.MaxHeaderEntries && headerEstimate(name, md) < min(server, c.limit) {
		return nil
	}
	h := make(map[string]string, len(md)+2)
	responseHeader(h, name, "0", nil, md)
	if _, err := frame.Check(&transport.Message{Header: h}, min(server, c.limit)); err == nil {
		return nil // the body is not measured (Borrows)
	}
	cdc, ce := ent.srv.codecFor(c.ctype)
	if ce != nil {
		return ce
	}
	body, fail := encodeReply(cdc, nil, name, r)
	if fail != nil {
		return fail
	}
	return c.replyCheck(name, body, md, nil, server, ans)
}

// replyCheck applies to a reply of name, its body body and its metadata
// md, or to its error reply e with md, what the network would: a reply
// over the Server's limit, server, is an error reply without the metadata
// (replyTooLarge); one over the Client's only makes the Client drop the
// connection. It returns e when the reply goes.
func (c *Client) replyCheck(name string, body []byte, md Metadata, e *Error, server int, ans *answer) error {
	h := make(map[string]string, len(md)+4)
	responseHeader(h, name, "0", e, md)
	resp := transport.Message{Header: h, Body: body}
	if _, err := frame.Check(&resp, server); err != nil {
		ans.arrive(nil) // the error reply goes without the metadata
		return replyTooLarge(name, err)
	}
	if _, err := frame.Check(&resp, c.limit); err != nil {
		ans.lost()
		return frameRefused(&resp, c.limit) // the Client drops a connection that sends it an oversize frame
	}
	return errOf(e)
}

// errorReplyCheck applies to the error reply e of a call of name, with
// its metadata md, what the network would: over the Server's frame limit
// (its metadata or its message), it is CodeInternal without either; over
// the Client's only, the Client drops the connection. An error reply has
// no body, so the check is exact; one far from the limits, the common
// case, builds nothing.
func (c *Client) errorReplyCheck(name string, md Metadata, e *Error, server int, ans *answer) error {
	if len(md)+fixedEntries <= frame.MaxHeaderEntries &&
		headerEstimate(name, md)+len(e.Message)+len(e.Code) < min(server, c.limit) {
		return e
	}
	return c.replyCheck(name, nil, md, e, server, ans)
}

// frameSizes says whether a request is near enough to a frame limit for the
// exact check, which builds the headers the network would send.
type frameSizes struct {
	server int  // the server listener's limit, or the client's if unknown
	near   bool // within reach of the smaller limit, or of the header entries' limit
}

// sizes estimates, from above, the frame of a request of name made with ctx
// whose body is body. It costs a look at each metadata entry and builds
// nothing: a call far from every limit, the common one, is checked no
// further.
func (c *Client) sizes(ctx context.Context, ent *entry, name string, body []byte) frameSizes {
	server := ent.limit
	if server <= 0 {
		server = c.limit
	}
	md := outgoing(ctx)
	if len(md)+fixedEntries > frame.MaxHeaderEntries {
		return frameSizes{server: server, near: true}
	}
	return frameSizes{server: server, near: len(body)+headerEstimate(name, md) >= min(server, c.limit)}
}

// headerEstimate bounds from above the size of the headers of a frame of
// a call of name with metadata md: the fixed headers, with room to spare,
// and each entry's prefixed key and value with their length prefixes.
func headerEstimate(name string, md Metadata) int {
	n := 512 + len(name)
	for k, v := range md {
		n += len(rpcwire.MetadataPrefix) + len(k) + len(v) + 2*4
	}
	return n
}

// requestCheck applies to a request of name with body body what the
// network would, when sizes says it is near a limit: a request the Client's
// transport refuses fails as the network's does (argsTooLarge: over the
// frame limit, or with too many header entries), and one only the Server
// refuses fails as the connection the Server drops does.
func (c *Client) requestCheck(ctx context.Context, name string, body []byte, sizes frameSizes) error {
	if !sizes.near {
		return nil
	}
	refused, lost := c.frameCheck(ctx, name, body, notOpen, sizes.server)
	if refused != nil {
		return argsTooLarge(name, refused)
	}
	return lost
}

// openKind says which frame frameCheck builds: a request, or the opening
// of a stream, asking for the ready frame or not.
type openKind int

const (
	notOpen openKind = iota
	openPlain
	openReady
)

// frameCheck builds the frame a request of name with body body, or the
// opening of a stream of name (open), would be on the network, and checks
// it as the two ends would: refused is the Client's transport's error
// when it is over the Client's frame limit or has too many header
// entries (nothing is sent), for the caller to word; lost is the caller's
// error when only the Server, whose limit is server, refuses it (it drops
// the connection).
func (c *Client) frameCheck(ctx context.Context, name string, body []byte, open openKind, server int) (refused, lost error) {
	h := make(map[string]string, fixedEntries)
	var d callDesc
	d.fromContext(ctx, name)
	requestHeader(h, &d, "0", c.ctype)
	if open != notOpen {
		openHeader(h, c.opts.streamWindow, open == openReady)
	}
	m := transport.Message{Header: h, Body: body}
	if _, err := frame.Check(&m, c.limit); err != nil {
		return err, nil
	}
	if _, err := frame.Check(&m, server); err != nil {
		return nil, errServerClosed // the Server drops a connection that sends it an oversize frame
	}
	return nil, nil
}

// headersRefused reports whether the network would refuse a request of name
// made with ctx whatever its body: its headers alone, the metadata, are
// over a frame limit or have too many entries. Direct mode measures no
// body, but it does refuse such a request, as the network does. A call
// without metadata, the common one, costs a context lookup.
func (c *Client) headersRefused(ctx context.Context, ent *entry, name string) bool {
	if len(outgoing(ctx)) == 0 {
		return false
	}
	return c.requestCheck(ctx, name, nil, c.sizes(ctx, ent, name, nil)) != nil
}

// msgFrame is the header of a message frame, for the frame-limit checks of
// copy mode: the same as the network's but for the Seq's digits.
var msgFrame = map[string]string{rpcwire.Seq: "0", rpcwire.Stream: rpcwire.StreamMsg}

// frameCheck applies to a message of copy mode what the network would: a
// message over the sender's limit fails its Send and nothing is sent
// (tooLarge); one over the receiver's only makes the receiver drop the
// connection, and lost is then the error the caller gets for that, as the
// network words it: the Server closed the connection (toServer), or the
// Client refused the frame.
func frameCheck(name string, body []byte, sender, receiver int, toServer bool) (tooLarge, lost error) {
	if len(body)+256 < min(sender, receiver) {
		return nil, nil // far from either: skip building the frame
	}
	m := transport.Message{Header: msgFrame, Body: body}
	if _, err := frame.Check(&m, sender); err != nil {
		return msgTooLarge(name, err), nil
	}
	if _, err := frame.Check(&m, receiver); err != nil {
		if toServer {
			return nil, errServerClosed
		}
		return nil, frameRefused(&m, receiver)
	}
	return nil, nil
}

// endCheck applies to the end of a copy-mode stream of name, with reply
// metadata md and the handler's error e, what the network would
// (serverConn.endStream): an end over the Server's limit, sender, goes
// without its metadata, as CodeInternal (endTooLarge); one over the
// Client's only, receiver, makes the Client drop the connection, and lost
// is then the caller's error, in the network's words. An end without
// metadata whose error is far from the limits, the common one, builds
// nothing.
func endCheck(name string, md Metadata, e *Error, sender, receiver int) (_ Metadata, _ *Error, lost error) {
	if len(md) == 0 && (e == nil || headerEstimate("", nil)+len(e.Message)+len(e.Code) < min(sender, receiver)) {
		return md, e, nil
	}
	m := transport.Message{Header: endHeader("0", md, e)}
	if _, err := frame.Check(&m, sender); err != nil {
		return nil, endTooLarge(name, err), nil
	}
	if _, err := frame.Check(&m, receiver); err != nil {
		return nil, e, frameRefused(&m, receiver)
	}
	return md, e, nil
}

// openCheck applies to the opening of a stream of name with ctx what the
// network would: an opening frame over the Client's limit, or with too
// many header entries, fails to open and nothing is sent (tooLarge); one
// over the Server's only makes the Server drop the connection (lost). The
// opening frame has no body, so the check is exact in direct mode too. A
// stream without much metadata, the common one, builds no frame. ready is
// whether the opening frame asks for the ready frame (openStream).
func (c *Client) openCheck(ctx context.Context, e *entry, name string, ready bool) (tooLarge, lost error) {
	sizes := c.sizes(ctx, e, name, nil)
	if !sizes.near {
		return nil, nil
	}
	kind := openPlain
	if ready {
		kind = openReady
	}
	refused, lost := c.frameCheck(ctx, name, nil, kind, sizes.server)
	if refused != nil {
		return openTooLarge(name, refused), nil
	}
	return nil, lost
}
