package rpcwire

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSeq(t *testing.T) {
	for _, s := range []string{"0", "1", "18446744073709551615"} {
		n, err := ParseSeq(map[string]string{Seq: s})
		if err != nil || FormatSeq(n) != s {
			t.Errorf("ParseSeq(%q) = %d, %v", s, n, err)
		}
	}
	for _, h := range []map[string]string{nil, {Seq: ""}, {Seq: "-1"}, {Seq: "1e3"}, {Seq: "18446744073709551616"}, {Seq: " 1"}, {Seq: "+1"}} {
		if _, err := ParseSeq(h); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseSeq(%v): %v, want ErrMalformed", h, err)
		}
	}
}

func TestTimeout(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Second, 1<<63 - 1} {
		got, err := ParseTimeout(FormatTimeout(d))
		if err != nil || got != d {
			t.Errorf("round trip of %v: %v, %v", d, got, err)
		}
	}
	if FormatTimeout(-time.Second) != "0" {
		t.Errorf("a negative timeout is sent as %q", FormatTimeout(-time.Second))
	}
	for _, s := range []string{"", "-1", "-0", "+5", "1.5", "1s", "9223372036854775808"} {
		if _, err := ParseTimeout(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseTimeout(%q): %v, want ErrMalformed", s, err)
		}
	}
}

func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"0", "1000", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeout(s)
		if err != nil {
			return
		}
		if !decimal(s) || d < 0 || strings.TrimLeft(s, "0") != strings.TrimLeft(FormatTimeout(d), "0") {
			t.Errorf("ParseTimeout(%q) = %v", s, d)
		}
	})
}

func TestWindow(t *testing.T) {
	for _, n := range []int{1, 262144, MaxWindow} {
		got, err := ParseWindow(FormatWindow(n))
		if err != nil || got != n {
			t.Errorf("round trip of %d: %d, %v", n, got, err)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", " 1", "1e3", "1073741825", "99999999999999999999"} {
		if _, err := ParseWindow(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseWindow(%q): %v, want ErrMalformed", s, err)
		}
	}
}

func TestDetails(t *testing.T) {
	ds := []Detail{{Type: "a.B", Value: []byte{1, 2}}, {Type: "", Value: nil}, {Type: "big", Value: make([]byte, 300)}}
	b := AppendDetails(nil, ds)
	if len(b) != DetailsLen(ds) {
		t.Fatalf("DetailsLen = %d, encoding has %d bytes", DetailsLen(ds), len(b))
	}
	got, err := ParseDetails(string(b))
	if err != nil || len(got) != 3 || got[0].Type != "a.B" || string(got[0].Value) != "\x01\x02" ||
		got[1].Type != "" || len(got[1].Value) != 0 || got[2].Type != "big" || len(got[2].Value) != 300 {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if got, err := ParseDetails(""); err != nil || got != nil {
		t.Errorf("ParseDetails(\"\") = %v, %v", got, err)
	}
	// A length past the end, a truncated uvarint, a type without its value.
	for _, s := range []string{"\x05ab", "\x80", "\x01a", "\x01a\x02b", "\x01a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"} {
		if _, err := ParseDetails(s); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), ErrorDetails) {
			t.Errorf("ParseDetails(%q): %v, want ErrMalformed naming %s", s, err, ErrorDetails)
		}
	}
}

// Any value parses or fails with ErrMalformed, never panics, and what
// parses encodes to bytes that parse to the same details (not always the
// same bytes: a length may be written with more bytes than it needs, as
// 0x82 0x00 for 2, which parses but encodes shorter).
func FuzzParseDetails(f *testing.F) {
	f.Add(string(AppendDetails(nil, []Detail{{Type: "a.B", Value: []byte{1, 2}}, {}})))
	f.Add("\x01a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
	f.Fuzz(func(t *testing.T, s string) {
		ds, err := ParseDetails(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseDetails(%q): %v, not ErrMalformed", s, err)
			}
			return
		}
		back := string(AppendDetails(nil, ds))
		again, err := ParseDetails(back)
		if err != nil || !reflect.DeepEqual(again, ds) {
			t.Fatalf("ParseDetails(%q) = %v, which encodes as %q and parses back as %v, %v", s, ds, back, again, err)
		}
		if len(back) > len(s) {
			t.Fatalf("ParseDetails(%q) encodes back longer, as %q", s, back)
		}
	})
}

// TestShortDecimal holds the fast path of ParseSeqValue to
// strconv.ParseUint: for every string, it either gives ParseUint's number
// for a decimal string or passes.
func TestShortDecimal(t *testing.T) {
	for _, s := range []string{"", "0", "7", "007", "42", "-1", "+1", " 1", "1 ", "1_0", "0x1", "1e3", "９", "/", ":",
		"999999999999999999", "9999999999999999999", "10000000000000000000", "18446744073709551615", "18446744073709551616"} {
		checkShortDecimal(t, s)
	}
}

func FuzzShortDecimal(f *testing.F) {
	for _, s := range []string{"0", "12", "9999999999999999999", "18446744073709551616", "1a"} {
		f.Add(s)
	}
	f.Fuzz(checkShortDecimal)
}

func checkShortDecimal(t *testing.T, s string) {
	n, ok := shortDecimal(s)
	if !ok {
		return // ParseUint judges it
	}
	want, err := strconv.ParseUint(s, 10, 64)
	if err != nil || !decimal(s) || n != want {
		t.Errorf("shortDecimal(%q) = %d; ParseUint: %d, %v", s, n, want, err)
	}
	if got, err := ParseSeqValue(s, true); err != nil || got != n {
		t.Errorf("ParseSeqValue(%q) = %d, %v; want %d", s, got, err, n)
	}
}
