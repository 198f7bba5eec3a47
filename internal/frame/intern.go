package frame

// maxInterned bounds how many distinct header keys one Reader remembers,
// and maxInternedKey and maxInternedValue the length of what it remembers:
// the keys and values worth keeping are the protocol's and the metadata's
// short strings, and a peer must not be able to make a connection keep
// megabytes by sending long ones once.
const (
	maxInterned      = 64
	maxInternedKey   = 64
	maxInternedValue = 256
)

// Interner lets a Reader rebuild the same header map for every message
// without allocating (and the shm transport's reader, which parses the same
// header blocks out of its ring): a key seen before, and a value equal to the one last
// seen under that key, reuse the strings made the first time. Headers are
// usually the same few keys with slowly changing values, so in steady state
// a Recv allocates only for values that changed.
type Interner struct {
	seen map[string]*interned
}

type interned struct {
	key, value string
}

// Field returns the strings for one header entry.
func (in *Interner) Field(kb, vb []byte) (k, v string) {
	// Looking a []byte up as string(kb) does not allocate; only storing does.
	e := in.seen[string(kb)]
	if e == nil {
		k, v = string(kb), string(vb)
		if in.seen == nil {
			in.seen = make(map[string]*interned, 8)
		}
		if len(in.seen) < maxInterned && len(k) <= maxInternedKey && len(v) <= maxInternedValue {
			in.seen[k] = &interned{key: k, value: v}
		}
		return k, v
	}
	if e.value != string(vb) {
		if len(vb) > maxInternedValue {
			return e.key, string(vb) // used once, not kept
		}
		e.value = string(vb)
	}
	return e.key, e.value
}
