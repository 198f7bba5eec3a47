package otelzerodial

import (
	"maps"
	"sync"
	"sync/atomic"
)

// maxCached bounds each cache: past it, values are made afresh each time,
// so that a caller inventing method names, or a service inventing codes,
// cannot grow a cache without end.
const maxCached = 1024

// cache holds values made once per key. A lookup reads an immutable map
// through an atomic pointer, taking no lock and allocating nothing; an
// insertion copies the map, which happens at most maxCached times.
type cache[K comparable, V any] struct {
	m  atomic.Pointer[map[K]V]
	mu sync.Mutex // serialises insertions
}

// get returns the value of k, made by newV the first time.
func (c *cache[K, V]) get(k K, newV func(K) V) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	v := newV(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old == nil {
		old = &map[K]V{}
	}
	if v, ok := (*old)[k]; ok {
		return v
	}
	if len(*old) >= maxCached {
		return v
	}
	m := make(map[K]V, len(*old)+1)
	maps.Copy(m, *old)
	m[k] = v
	c.m.Store(&m)
	return v
}
