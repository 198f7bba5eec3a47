package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSlowLink checks the slow-link targets and table on six runs of each
// row: text compressed to well under a third of the time, random bytes
// within noise of the plain twin, and a 16B call slower beyond noise.
func TestSlowLink(t *testing.T) {
	in := samples("SlowLink/zerodial-tcp/16B", 30, 300e3, 310e3, 320e3, 330e3, 340e3, 350e3) +
		samples("SlowLink/zerodial-tcp/text-1MiB", 40, 30e6, 31e6, 32e6, 33e6, 34e6, 35e6) +
		samples("SlowLink/zerodial-tcp/random-1MiB", 40, 170e6, 172e6, 174e6, 176e6, 178e6, 180e6) +
		samples("SlowLink/zerodial-tcp-plain/16B", 20, 200e3, 201e3, 202e3, 203e3, 204e3, 205e3) +
		samples("SlowLink/zerodial-tcp-plain/text-1MiB", 30, 170e6, 172e6, 174e6, 176e6, 178e6, 180e6) +
		samples("SlowLink/zerodial-tcp-plain/random-1MiB", 30, 168e6, 171e6, 174e6, 175e6, 177e6, 181e6)
	s, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Outcome{}
	for _, o := range Evaluate(s) {
		got[o.Target.String()] = o
	}
	for name, want := range map[string]Verdict{
		"zerodial-tcp ≤ 0.33× zerodial-tcp-plain (slowlink/text-1MiB ns/op)":   Met,
		"zerodial-tcp ≤ 1.05× zerodial-tcp-plain (slowlink/random-1MiB ns/op)": Unsure, // median 1.00×, interval 0.94×–1.07×
		"zerodial-tcp ≤ 1.05× zerodial-tcp-plain (slowlink/16B ns/op)":         Missed,
		"zerodial-mux ≤ 0.33× zerodial-mux-plain (slowlink/text-1MiB ns/op)":   Unsure, // no data
	} {
		o, ok := got[name]
		if !ok {
			t.Errorf("no target %q", name)
			continue
		}
		if o.Verdict != want {
			t.Errorf("%s: verdict %v (interval %v, median %v), want %v", name, o.Verdict, o.Interval, o.Value, want)
		}
	}
	if o := got["zerodial-mux ≤ 0.33× zerodial-mux-plain (slowlink/text-1MiB ns/op)"]; o.OK {
		t.Errorf("mux's text target has data: %+v", o)
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 6}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Compression over a slow link",
		"| zerodial-tcp | text-1MiB | 32,500,000 | 32.3 | 100 | 40 | 0.19× |",
		"| zerodial-tcp-plain | text-1MiB | 175,000,000 | 5.99 | 100 | 30 | — |",
		"| zerodial-tcp | 16B | 325,000 | 0.0492 | 100 | 30 | 1.60× |",
		"| zerodial-mux | random-1MiB | — | — | — | — | — |",
		"| zerodial-tcp ≤ 0.33× zerodial-tcp-plain (slowlink/text-1MiB ns/op) | 0.19× |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}
