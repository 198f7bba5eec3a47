package main

import "strings"

// httpRows are the rows of the HTTP table: a dispatch.Server's methods
// served over HTTP by httpzerodial's Handler to connect-go's client, and
// connect-go serving the same call natively, each divided by httpRefs.
var httpRows = []struct{ name, what string }{
	{"zerodial-http-connect", "httpzerodial, Connect JSON, HTTP/1.1"},
	{"zerodial-http-grpc", "httpzerodial, gRPC msgpack, h2c"},
	{"connect-native", "connect-go's own handler, Connect protobuf, HTTP/1.1"},
}

// httpRefs are what the HTTP table divides by: connect-go serving the call
// natively, and grpc-go over TCP.
var httpRefs = []string{"connect-native", "grpc-tcp"}

// writeHTTP writes the HTTP table: each row's 16B call and 10,000-message
// stream, and their ns/op divided by each of httpRefs'.
func writeHTTP(p func(string, ...any), s *Set) {
	p("\n## HTTP: a Server's methods over Connect and gRPC through httpzerodial\n\n")
	p("A 16B call and a 10,000-message stream through `httpzerodial.Handler` with connect-go's own client, beside ")
	p("connect-go serving the same call natively with protobuf and grpc-go over TCP (see ../README.md). ")
	p("The ÷ columns divide ns/op (below 1: faster than the reference).\n\n")
	p("| row | what | 16B ns/op | allocs/op |")
	for _, r := range httpRefs {
		p(" ÷ %s |", r)
	}
	p(" stream ns/op | allocs/msg |")
	for _, r := range httpRefs {
		p(" ÷ %s |", r)
	}
	p("\n| --- | --- |%s\n", strings.Repeat(" ---: |", 2*(2+len(httpRefs))))
	for _, row := range httpRows {
		u, st := unaryName(row.name, "16B"), streamName(row.name)
		p("| %s | %s | %s | %s |", row.name, row.what, cell(s, u, "ns/op"), cell(s, u, "allocs/op"))
		for _, r := range httpRefs {
			p(" %s |", ratioCell(s, u, unaryName(r, "16B"), "ns/op"))
		}
		p(" %s | %s |", cell(s, st, "ns/op"), cell(s, st, "allocs/msg"))
		for _, r := range httpRefs {
			p(" %s |", ratioCell(s, st, streamName(r), "ns/op"))
		}
		p("\n")
	}
}
