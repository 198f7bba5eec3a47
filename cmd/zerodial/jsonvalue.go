package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// fromJSON decodes one JSON value into generic values for msgpack: objects
// as map[string]any, arrays as []any, and numbers as int64 (or uint64)
// when they are whole, float64 otherwise, so that a handler's int fields
// get integers (msgpack will not decode a float into an int).
func fromJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty")
		}
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return numbers(v)
}

// numbers replaces v's json.Numbers with int64, uint64 or float64.
func numbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u, nil
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		// A whole number written with a fraction or an exponent (2.0,
		// 1e3) is still an integer, which an int field takes and a float
		// field takes too.
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), nil
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, e := range v {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

// toJSON decodes a msgpack body without its type and encodes it as JSON.
func toJSON(body []byte) (json.RawMessage, error) {
	d := msgpack.NewDecoder(bytes.NewReader(body))
	// Maps of any keys: a Go map[int]string is a msgpack map of integer
	// keys, which the default decoder (string keys) refuses.
	d.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("cannot decode the reply: %w", err)
	}
	out, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, fmt.Errorf("the reply has no JSON form: %w", err)
	}
	return out, nil
}

// jsonable converts the maps of v to maps of string keys, as JSON needs.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			key, ok := k.(string)
			if !ok {
				key = fmt.Sprint(k)
			}
			m[key] = jsonable(e)
		}
		return m
	case map[string]any:
		for k, e := range v {
			v[k] = jsonable(e)
		}
	case []any:
		for i, e := range v {
			v[i] = jsonable(e)
		}
	}
	return v
}
