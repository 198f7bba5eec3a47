package main

import "strings"

// slowLinkPairs are the rows of BenchmarkSlowLink: each zerodial path with
// compression on, and its twin with compression off ("-plain"), which the
// slow-link table and targets divide it by.
var slowLinkPairs = []struct{ impl, plain string }{
	{"zerodial-tcp", "zerodial-tcp-plain"},
	{"zerodial-mux", "zerodial-mux-plain"},
}

// slowLinkPayloads are BenchmarkSlowLink's payloads, each with the bytes
// one call carries each way: a 16B Multiply, a MiB of text (which
// compresses well) and a MiB of random bytes (which does not).
var slowLinkPayloads = []struct {
	name  string
	bytes int
}{
	{"16B", 16},
	{"text-1MiB", 1 << 20},
	{"random-1MiB", 1 << 20},
}

// slowLinkSize is the prefix of a Target's Size for BenchmarkSlowLink:
// "slowlink/text-1MiB" is the text payload's row.
const slowLinkSize = "slowlink/"

func slowLinkName(impl, payload string) string { return "SlowLink/" + impl + "/" + payload }

// writeSlowLink writes the slow-link table: every row at every payload,
// its ns/op, the payload's MB/s, and its ns/op divided by its -plain
// twin's.
func writeSlowLink(p func(string, ...any), s *Set) {
	p("\n## Compression over a slow link\n\n")
	p("`BenchmarkSlowLink`: one echo call per op through a userspace proxy that passes 100 Mbit/s each way over loopback, ")
	p("each path with compression on, beside its `-plain` twin with it off. MB/s is the payload's bytes (one way) per ")
	p("second of call; `÷ plain` divides ns/op by the twin's (below 1: compression makes the call faster).\n\n")
	p("| impl | payload | ns/op | MB/s | B/op | allocs/op | ÷ plain |\n")
	p("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, pair := range slowLinkPairs {
		for _, impl := range []string{pair.impl, pair.plain} {
			for _, pl := range slowLinkPayloads {
				name := slowLinkName(impl, pl.name)
				div := "—"
				if impl == pair.impl {
					div = ratioCell(s, name, slowLinkName(pair.plain, pl.name), "ns/op")
				}
				p("| %s | %s | %s | %s | %s | %s | %s |\n", impl, pl.name, cell(s, name, "ns/op"),
					payloadRate(s, name, pl.bytes), cell(s, name, "B/op"), cell(s, name, "allocs/op"), div)
			}
		}
	}
}

// payloadRate is n bytes per median ns/op of name, in MB/s (10⁶ bytes, as
// go test's), or "—".
func payloadRate(s *Set, name string, n int) string {
	ns, ok := s.Median(name, "ns/op")
	if !ok || ns <= 0 {
		return "—"
	}
	return fmtNum(float64(n) / ns * 1e3)
}

// slowLinkPayload returns the payload a Target's Size names in
// BenchmarkSlowLink, and false when the Size is not slow-link's.
func slowLinkPayload(size string) (string, bool) {
	pl, ok := strings.CutPrefix(size, slowLinkSize)
	return pl, ok
}
