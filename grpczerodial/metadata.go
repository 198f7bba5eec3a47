package grpczerodial

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/zerodial/transport/dispatch"
)

// gRPC metadata is a key with any number of values; dispatch's is one
// string per key. A key's first value travels under the key itself, so a
// dispatch interceptor or handler reads gRPC metadata as its own
// (dispatch.MetadataValue(ctx, "authorization")), and the i-th further
// value under "key#i". A reply's trailer entries travel under "key#t",
// "key#t1", ...: gRPC's keys hold only 0-9, a-z, '-', '_' and '.', so a
// '#' is never part of one, and both are still valid HTTP header names.

// toDispatchMD encodes md (headers, trailer false; or trailers) into out.
func toDispatchMD(out dispatch.Metadata, md metadata.MD, trailer bool) {
	suffix := "#"
	if trailer {
		suffix = "#t"
	}
	for k, vs := range md {
		k = strings.ToLower(k)
		for i, v := range vs {
			switch {
			case i == 0 && !trailer:
				out[k] = v
			case i == 0:
				out[k+suffix] = v
			default:
				out[k+suffix+strconv.Itoa(i)] = v
			}
		}
	}
}

// fromDispatchMD decodes dispatch metadata into gRPC's headers and
// trailers. A key of dispatch's own (set by a caller or handler that is
// not gRPC's) is a header, in lower case as gRPC's are.
func fromDispatchMD(md dispatch.Metadata) (header, trailer metadata.MD) {
	if len(md) == 0 {
		return nil, nil
	}
	type entry struct {
		i int
		v string
	}
	var hs, ts map[string][]entry
	for k, v := range md {
		base, tail, found := strings.Cut(k, "#")
		base = strings.ToLower(base)
		target := &hs
		i := 0
		if found {
			if t, ok := strings.CutPrefix(tail, "t"); ok {
				target, tail = &ts, t
			}
			if tail != "" {
				n, err := strconv.Atoi(tail)
				if err != nil || n < 1 {
					base, target, i = strings.ToLower(k), &hs, 0 // not ours: a key as it came
				} else {
					i = n
				}
			}
		}
		if *target == nil {
			*target = make(map[string][]entry)
		}
		(*target)[base] = append((*target)[base], entry{i, v})
	}
	collect := func(m map[string][]entry) metadata.MD {
		if m == nil {
			return nil
		}
		out := make(metadata.MD, len(m))
		for k, es := range m {
			vs := make([]string, len(es))
			// Few values per key: order them by index with an insertion sort.
			for j := 1; j < len(es); j++ {
				for l := j; l > 0 && es[l].i < es[l-1].i; l-- {
					es[l], es[l-1] = es[l-1], es[l]
				}
			}
			for j, e := range es {
				vs[j] = e.v
			}
			out[k] = vs
		}
		return out
	}
	return collect(hs), collect(ts)
}

// outgoing returns ctx carrying gRPC's outgoing metadata as dispatch's, so
// that it reaches the handler on every path.
func outgoing(ctx context.Context) context.Context {
	md, ok := metadata.FromOutgoingContext(ctx)
	if !ok || len(md) == 0 {
		return ctx
	}
	dmd := make(dispatch.Metadata, len(md))
	toDispatchMD(dmd, md, false)
	return dispatch.WithMetadata(ctx, dmd)
}

// replyMD encodes a handler's header and trailer as one reply metadata.
func replyMD(header, trailer metadata.MD) dispatch.Metadata {
	if len(header)+len(trailer) == 0 {
		return nil
	}
	out := make(dispatch.Metadata, len(header)+len(trailer))
	toDispatchMD(out, header, false)
	toDispatchMD(out, trailer, true)
	return out
}
