package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// RegisterOption configures Register, RegisterName and Handle.
type RegisterOption func(*registerOptions)

type registerOptions struct {
	all      bool      // Borrows() with no names
	only     []string  // the methods Borrows named
	encoding *Encoding // WithEncoding's
}

// Borrows declares that the methods being registered borrow their
// arguments and reply rather than keep them, as io.Writer's Write borrows
// p. It is a promise made by the handler's author, and it is what lets a
// Client with ShortcutDirect skip the codec. The handler promises:
//
//   - it reads args, and anything reachable from them, only until it
//     returns, and keeps no reference to them;
//   - it puts nothing in *reply that it keeps a reference to or changes
//     later (its own state, a cache entry, a shared slice).
//
// In return, a ShortcutDirect caller in this process hands the handler its
// own values: the handler receives the caller's args (the caller's pointer,
// if it passed one) and writes the caller's *reply in place. Nothing is
// encoded, so args and reply are not measured against the frame limit:
// arguments that the network would refuse as too large are accepted. The
// call's metadata is measured, as the network measures a request's
// headers: metadata over the frame limit, or with more entries than a
// frame carries (WIRE.md), is refused with the network's error.
//
// When the caller's context can end (it has a Done channel), Call returns
// as soon as it ends, whatever the handler is doing — as on every path. So
// the handler never holds the caller's memory after Call returns, such a
// call runs the handler on a deep copy of the arguments (made by reflection,
// not the codec) and a reply of its own, which is moved into the caller's
// only if the caller is still waiting. So that a method behaves the same
// whatever its callers' contexts, registration fails for argument types
// that cannot be deep-copied that way (unexported fields holding pointers,
// slices or maps; channels; functions). Only an interface holding such a
// value, or nesting over 10,000 levels deep, is found out at call time, and
// makes that call run as ShortcutCopy.
//
// With no names, every method registered by this call borrows. With names
// (method names without the service: "Get", not "KV.Get"), those do, and
// each must be a method being registered; several Borrows options add up.
// Methods registered without Borrows run as ShortcutCopy for a
// ShortcutDirect caller: on every other path, and for every other method,
// Borrows changes nothing.
func Borrows(methods ...string) RegisterOption {
	return func(o *registerOptions) {
		if len(methods) == 0 {
			o.all = true
		}
		o.only = append(o.only, methods...)
	}
}

func registerOpts(opts []RegisterOption) (registerOptions, error) {
	var o registerOptions
	for _, opt := range opts {
		if opt == nil {
			return o, errors.New("dispatch: nil RegisterOption")
		}
		opt(&o)
	}
	return o, nil
}

// check reports a Borrows name that is not among the methods of service.
func (o registerOptions) check(service string, methods []string) error {
	var bad []string
	for _, n := range o.only {
		if !slices.Contains(methods, n) {
			bad = append(bad, n)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("dispatch: Borrows names %s, not a method of %s being registered (have %s)",
			strings.Join(bad, ", "), service, strings.Join(methods, ", "))
	}
	return nil
}

// borrowing reports whether the method called short borrows.
func (o registerOptions) borrowing(short string) bool {
	return o.all || slices.Contains(o.only, short)
}
