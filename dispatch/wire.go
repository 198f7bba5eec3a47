package dispatch

import (
	"strings"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/codec"
	"github.com/zerodial/transport/internal/rpcwire"
)

// requestHeader fills h with the headers of a request of the call d
// describes, its body encoded in the content type ctype, as the network
// sends them (receivedHeader.desc reads them back). The shortcut builds
// the same headers to apply the same frame limits.
func requestHeader(h map[string]string, d *callDesc, seqText, ctype string) {
	if !setRequestHeader(h, d, seqText, ctype) {
		clear(h)
		setRequestHeader(h, d, seqText, ctype)
	}
}

// requestKeys are the headers a request, or a stream's opening frame (the
// most), carries besides its metadata: requestHeader's and openHeader's.
// TestRequestKeys holds both to it, for every field of callDesc.
var requestKeys = [...]string{
	rpcwire.ServiceMethod, rpcwire.Seq, rpcwire.ContentType, rpcwire.Timeout,
	rpcwire.Stream, rpcwire.Window, rpcwire.Ready,
}

// fixedEntries bounds the entries the network adds to a request's metadata
// in its headers, for the shortcut's checks of the header entries' limit.
const fixedEntries = len(requestKeys)

// setRequestHeader sets a request's headers in h (headerFill) and reports
// whether h holds no others.
func setRequestHeader(h map[string]string, d *callDesc, seqText, ctype string) bool {
	f := headerFill{h: h}
	f.set(rpcwire.ServiceMethod, d.name)
	f.set(rpcwire.Seq, seqText)
	if ctype != codec.Msgpack.Name() {
		f.set(rpcwire.ContentType, ctype) // absent means msgpack (WIRE.md)
	}
	if !d.deadline.IsZero() {
		f.set(rpcwire.Timeout, rpcwire.FormatTimeout(time.Until(d.deadline)))
	}
	f.metadata(d.md)
	return f.exact()
}

// openHeader adds to h, a request's headers, what makes it the opening
// frame of a stream: the caller's window, and whether it asks for the
// ready frame.
func openHeader(h map[string]string, window int, ready bool) {
	h[rpcwire.Stream] = rpcwire.StreamOpen
	h[rpcwire.Window] = rpcwire.FormatWindow(window)
	if ready {
		h[rpcwire.Ready] = rpcwire.ReadyYes
	}
}

// headerFill sets a message's headers in a map that held another
// message's, which is cleared only when it holds a key the new message
// does not set: clearing a map costs more than assigning a call's few
// headers again, and the messages a connection sends one after another
// mostly carry the same keys (Service-Method, Seq). The keys set must
// differ from one another, which the wire's names and the metadata
// prefix see to: then a map holding as many keys as were set holds
// nothing else. It serves BenchmarkUnary's network rows
// (zerodial-memory's most, where the headers are most of a message's
// cost).
type headerFill struct {
	h map[string]string
	n int // keys set
}

func (f *headerFill) set(k, v string) {
	f.h[k] = v
	f.n++
}

// metadata sets md's entries, each key prefixed as WIRE.md says.
func (f *headerFill) metadata(md Metadata) {
	for k, v := range md {
		f.set(rpcwire.MetadataPrefix+k, v)
	}
}

// exact reports whether the map holds only the keys set.
func (f *headerFill) exact() bool { return len(f.h) == f.n }

// addMetadata adds md to a message's headers, each key prefixed as WIRE.md
// says: request metadata, and the reply's.
func addMetadata(h map[string]string, md Metadata) {
	for k, v := range md {
		h[rpcwire.MetadataPrefix+k] = v
	}
}

// receivedHeader reads a received message's headers. It looks up Seq and
// Service-Method, which nearly every message carries (every request and
// reply), and when the map holds nothing else, answers every other lookup
// "absent" and the metadata nil without touching the map: a call's
// message would otherwise cost a lookup per header its reader asks about
// (Drain, Cancel, Stream, Content-Type, Window, Timeout, Error) and a
// range over the map for its metadata, which draws a random number. It
// serves BenchmarkUnary's network rows (zerodial-memory's most, where the
// headers are most of a message's cost). TestReceivedHeader holds it to
// the map's own answers.
type receivedHeader struct {
	h       map[string]string
	seq     string // Seq's value
	name    string // Service-Method's value
	hasSeq  bool
	hasName bool
	only    bool // h holds no keys but Seq and Service-Method
}

func readHeader(h map[string]string) receivedHeader {
	r := receivedHeader{h: h}
	r.seq, r.hasSeq = h[rpcwire.Seq]
	r.name, r.hasName = h[rpcwire.ServiceMethod]
	n := 0
	if r.hasSeq {
		n++
	}
	if r.hasName {
		n++
	}
	r.only = len(h) == n
	return r
}

// get looks up k, which must be neither Seq nor Service-Method (their
// values are r's fields).
func (r *receivedHeader) get(k string) (string, bool) {
	if r.only {
		return "", false
	}
	v, ok := r.h[k]
	return v, ok
}

// has reports whether k, which must be neither Seq nor Service-Method, is
// present.
func (r *receivedHeader) has(k string) bool {
	_, ok := r.get(k)
	return ok
}

// metadata returns the message's metadata, nil if none (metadataOf).
func (r *receivedHeader) metadata() Metadata {
	if r.only {
		return nil
	}
	return metadataOf(r.h)
}

// parseSeq reads the sequence number (rpcwire.ParseSeq).
func (r *receivedHeader) parseSeq() (uint64, error) {
	return rpcwire.ParseSeqValue(r.seq, r.hasSeq)
}

// metadataOf returns the metadata among a message's headers, nil if none.
func metadataOf(h map[string]string) Metadata {
	var md Metadata
	for k, v := range h {
		if key, ok := strings.CutPrefix(k, rpcwire.MetadataPrefix); ok {
			if md == nil {
				md = make(Metadata)
			}
			md[key] = v
		}
	}
	return md
}

// responseHeader fills h with a response's headers, its metadata md
// included.
func responseHeader(h map[string]string, name, seqText string, e *Error, md Metadata) {
	if !setResponseHeader(h, name, seqText, e, md) {
		clear(h)
		setResponseHeader(h, name, seqText, e, md)
	}
}

// setResponseHeader sets a response's headers in h (headerFill) and
// reports whether h holds no others.
func setResponseHeader(h map[string]string, name, seqText string, e *Error, md Metadata) bool {
	f := headerFill{h: h}
	f.set(rpcwire.ServiceMethod, name)
	f.set(rpcwire.Seq, seqText)
	if e != nil {
		f.set(rpcwire.Error, e.Message)
		if e.Code != CodeUnknown {
			f.set(rpcwire.ErrorCode, string(e.Code))
		}
		if len(e.details) > 0 {
			f.set(rpcwire.ErrorDetails, detailsHeader(e))
		}
	}
	f.metadata(md)
	return f.exact()
}

// Bounds on what a connection's reader keeps of a message it has handled,
// for the next: enough that ordinary messages reuse it all and allocate
// nothing, while a request or reply of megabytes, or of a thousand
// headers, is not pinned for as long as the connection lives (an idle
// connection may live for minutes; a mux session holds thousands).
//
// A header map past keptHeaders is dropped after every message: maps are
// cheap to make again. A body buffer past flow.KeptBody is kept while
// messages keep coming — growing it again for every megabyte message would
// cost more than the message — and a Server drops it once its connection
// goes quiet (serverConn.quiet).
const keptHeaders = 32

// shed drops m's header map past keptHeaders, once m has been handled.
func shed(m *transport.Message) {
	if len(m.Header) > keptHeaders {
		m.Header = nil // the reader makes a new map
	}
}

// maxKeptBuffer bounds the request buffer a connection keeps between calls:
// large enough that calls with bodies of a megabyte (plus their encoding's
// overhead) reuse it rather than grow a new one each time.
const maxKeptBuffer = 2 << 20

// maxBatchedBody is the largest request body sent through the socket's
// batch (transport.BatchSender), which copies it: a larger one is written
// from the connection's buffer, as the socket's Send avoids a copy too.
const maxBatchedBody = 32 << 10

// longAgo is a deadline in the past, to interrupt a blocked Send.
var longAgo = time.Unix(1, 0)
