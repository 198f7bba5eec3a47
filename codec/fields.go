package codec

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// checkFieldsMatched is gob's "no fields matched" rule (WIRE.md, section
// 3, Codecs): a non-empty map decoded into a struct must name at least one of its
// fields. Keys the struct does not have, beside keys it has, are ignored,
// so that a message may gain fields its reader does not know yet; but a
// map none of whose keys fit is a message of another type, and decoding it
// as zero values would hide the mistake (a caller passing the wrong
// arguments).
//
// It runs only when decoding left the struct zero, the one case in which
// no key may have matched, and then asks msgpack itself, key by key, which
// keys the struct knows, so that its naming rules (tags, embedded fields)
// need not be copied here.
func checkFieldsMatched(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	t := rv.Type().Elem()
	if t.Kind() != reflect.Struct || !rv.Elem().IsZero() || len(data) == 0 {
		return nil
	}
	// Only a map can fail the rule; say no at once, with no decoder, to
	// anything else and to the empty fixmap that struct{}{} encodes to.
	if c := data[0]; c <= 0x80 || c > 0x8f && c != 0xde && c != 0xdf {
		return nil
	}
	d := msgpack.NewDecoder(bytes.NewReader(data))
	n, err := d.DecodeMapLen()
	if err != nil || n <= 0 {
		return nil // an array-encoded struct, nil, or an empty map
	}
	probe := msgpack.NewDecoder(nil)
	var keys []string
	for range n {
		key, err := d.DecodeRaw()
		if err != nil {
			return nil
		}
		val, err := d.DecodeRaw()
		if err != nil {
			return nil
		}
		// A map of this one entry: msgpack's fixmap of length 1.
		entry := append(append([]byte{0x81}, key...), val...)
		probe.Reset(bytes.NewReader(entry))
		probe.DisallowUnknownFields(true) // after Reset, which clears it
		if probe.Decode(reflect.New(t).Interface()) == nil {
			return nil // a key the struct has
		}
		var name string
		if msgpack.Unmarshal(key, &name) == nil {
			keys = append(keys, name)
		}
	}
	return fmt.Errorf("%w: the map's keys %q name no field of type %s", ErrNoFieldsMatched, keys, t)
}
