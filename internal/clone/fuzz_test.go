package clone_test

import (
	"testing"
	"time"
)

// FInner is the pointee and struct element of FuzzT.
type FInner struct {
	S    string
	I    int64
	B    []byte
	Next *FInner
}

// FuzzT is a representative non-flat argument type.
type FuzzT struct {
	B []byte
	M map[string][]int
	P *FInner
	L []any
	A [2]FInner
	T time.Time
	F Flat16
}

// decoder builds values from fuzz bytes; past the end it reads zeros.
type decoder struct {
	b     []byte
	depth int
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) n() int { return int(d.byte() % 8) }

func (d *decoder) int() int64 { return int64(int8(d.byte())) * int64(d.byte()) }

func (d *decoder) str() string {
	n := d.n()
	s := make([]byte, 0, n)
	for range n {
		s = append(s, d.byte())
	}
	return string(s)
}

// bytes returns nil, empty (with spare capacity) or n bytes.
func (d *decoder) bytes() []byte {
	switch k := d.byte() % 4; k {
	case 0:
		return nil
	case 1:
		return make([]byte, 0, 4)
	default:
		return []byte(d.str())
	}
}

func (d *decoder) ints() []int {
	switch d.byte() % 3 {
	case 0:
		return nil
	case 1:
		return []int{}
	}
	s := make([]int, d.n())
	for i := range s {
		s[i] = int(d.int())
	}
	return s
}

func (d *decoder) inner() FInner {
	v := FInner{S: d.str(), I: d.int(), B: d.bytes()}
	if d.depth < 4 && d.byte()%2 == 1 {
		d.depth++
		next := d.inner()
		d.depth--
		v.Next = &next
	}
	return v
}

func (d *decoder) innerPtr() *FInner {
	if d.byte()%3 == 0 {
		return nil
	}
	v := d.inner()
	return &v
}

func (d *decoder) any() any {
	if d.depth >= 4 {
		return nil
	}
	d.depth++
	defer func() { d.depth-- }()
	switch d.byte() % 10 {
	case 0:
		return nil
	case 1:
		return d.int()
	case 2:
		return d.str()
	case 3:
		return d.bytes()
	case 4:
		m := map[string]int{}
		for range d.n() {
			m[d.str()] = int(d.int())
		}
		return m
	case 5:
		return d.innerPtr()
	case 6:
		return d.inner()
	case 7:
		return d.list()
	case 8:
		return float64(d.int()) / 4
	default:
		return Flat16{d.int(), d.int()}
	}
}

func (d *decoder) list() []any {
	switch d.byte() % 4 {
	case 0:
		return nil
	case 1:
		return []any{}
	}
	l := make([]any, d.n())
	for i := range l {
		l[i] = d.any()
	}
	return l
}

func decodeFuzzT(b []byte) FuzzT {
	d := &decoder{b: b}
	v := FuzzT{B: d.bytes(), P: d.innerPtr()}
	switch d.byte() % 3 {
	case 0:
	case 1:
		v.M = map[string][]int{}
	default:
		v.M = map[string][]int{}
		for range d.n() {
			v.M[d.str()] = d.ints()
		}
	}
	v.L = d.list()
	if v.P != nil && d.byte()%2 == 1 {
		v.L = append(v.L, v.P) // shared in the source, not in the copy
	}
	v.A = [2]FInner{d.inner(), d.inner()}
	v.T = time.Unix(d.int()*1000, d.int()).UTC()
	v.F = Flat16{d.int(), d.int()}
	return v
}

func FuzzCopy(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x02\x03abc\x01\x05hello\x01"))
	f.Add([]byte{3, 7, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCopy(t, func() any { return decodeFuzzT(b) })
	})
}
