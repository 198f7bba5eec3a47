package rpcwire

import (
	"errors"
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
