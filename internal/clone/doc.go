// Package clone deep-copies Go values by reflection.
//
// The in-process "direct" dispatch shortcut hands a caller's argument value
// to a server handler without encoding it. When the caller's context can end
// early, the call may return to the caller while the handler still runs, so
// the handler must not hold memory the caller owns: the arguments are
// deep-copied first. A codec round trip would do that too, but slowly; this
// package plans the copy once per type (For) and then pays only for the copy
// itself (Plan.Copy).
//
// A copy shares no mutable memory with its source. Strings and values boxed
// in interfaces are immutable and may be shared. Sharing inside the source is
// not preserved: two pointers to one value become two copies, as a codec
// round trip would make them. Slices are copied with cap == len; nil slices
// and maps stay nil and empty ones stay empty and non-nil.
//
// Channels, functions, unsafe pointers, maps whose keys are not flat, and
// structs with an unexported field that is not flat cannot be copied: For
// reports them, naming the offending type and the path to it, for example
//
//	clone: pkg.Req.Items[].Ch: chan int cannot be copied
//
// In a path, ".Name" is a struct field, "[]" an element of a slice or array
// or a value of a map, and ".(T)" the dynamic type T held by an interface.
// Pointers are followed without a mark, as Go selectors do.
package clone
