package codec

import (
	"errors"
	"fmt"
)

// ErrUnknownField reports a map key that names no field of the struct it is
// decoded into, refused by strict decoding (UnmarshalStrict). A *FieldError
// says which key, and where.
var ErrUnknownField = errors.New("codec: unknown field")

// FieldError is a body that does not fit the type it is decoded into,
// found at one place: the field, element or map value there, what the body
// holds and what the Go type wants. Msgpack's Unmarshal returns it, when
// decoding fails, in place of the decoder's own words ("invalid code=a3
// decoding int64"), which name neither the field nor the value; the
// decoder's error is kept as Err.
//
// It is found after the failure, by a second walk of the body against the
// target's type, so that a body that decodes pays nothing for it.
type FieldError struct {
	// Into is the type decoded into, as %T prints it: "*api.ReserveReq".
	Into string
	// Field is where in it: "Qty", "Items[2].Qty", `Tags["k"]`; empty for
	// the value itself.
	Field string
	// Got is what the body holds there: `string "three"`, "map of 2
	// entries". Empty for an unknown field.
	Got string
	// Want is the Go type there ("int64"); for an unknown field, the
	// struct that has no such field.
	Want string
	// Unknown is set for a key strict decoding refused: Field names it,
	// and Want is its struct. errors.Is(err, ErrUnknownField) holds.
	Unknown bool
	// Err is the decoder's own error, or ErrUnknownField.
	Err error
}

func (e *FieldError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("codec: cannot unmarshal into %s: unknown field %s (%s has no such field)", e.Into, e.Field, e.Want)
	}
	if e.Field == "" {
		return fmt.Sprintf("codec: cannot unmarshal into %s: got %s, want %s", e.Into, e.Got, e.Want)
	}
	return fmt.Sprintf("codec: cannot unmarshal into %s: field %s: got %s, want %s", e.Into, e.Field, e.Got, e.Want)
}

// Unwrap returns the decoder's error.
func (e *FieldError) Unwrap() error { return e.Err }

// Is reports an unknown field as ErrUnknownField.
func (e *FieldError) Is(target error) bool { return e.Unknown && target == ErrUnknownField }
