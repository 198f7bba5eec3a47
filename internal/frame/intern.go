package frame

// maxInterned bounds how many distinct header keys one Reader remembers.
const maxInterned = 64

// interner lets a Reader rebuild the same header map for every message
// without allocating: a key seen before, and a value equal to the one last
// seen under that key, reuse the strings made the first time. Headers are
// usually the same few keys with slowly changing values, so in steady state
// a Recv allocates only for values that changed.
type interner struct {
	seen map[string]*interned
}

type interned struct {
	key, value string
}

// field returns the strings for one header entry.
func (in *interner) field(kb, vb []byte) (k, v string) {
	// Looking a []byte up as string(kb) does not allocate; only storing does.
	e := in.seen[string(kb)]
	if e == nil {
		k, v = string(kb), string(vb)
		if in.seen == nil {
			in.seen = make(map[string]*interned, 8)
		}
		if len(in.seen) < maxInterned {
			in.seen[k] = &interned{key: k, value: v}
		}
		return k, v
	}
	if e.value != string(vb) {
		e.value = string(vb)
	}
	return e.key, e.value
}
