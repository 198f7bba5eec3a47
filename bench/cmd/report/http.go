package main

// httpRows are the rows of the HTTP tables: a dispatch.Server's methods
// served over HTTP by httpzerodial's Handler to connect-go's client, and
// connect-go serving the same call natively, each divided by httpRefs.
var httpRows = []string{
	"zerodial-http-connect", // Connect JSON over HTTP/1.1
	"zerodial-http-grpc",    // gRPC msgpack over h2c
	"connect-native",        // Connect protobuf over HTTP/1.1
	"connect-native-grpc",   // gRPC protobuf over h2c
}

// httpRefs are what the HTTP tables divide by: connect-go serving the call
// natively over each protocol, and grpc-go over TCP.
var httpRefs = []string{"connect-native", "connect-native-grpc", "grpc-tcp"}

// writeHTTP writes the HTTP tables: each row's 16B call and its
// 10,000-message stream, their ns/op divided by each of httpRefs'.
func writeHTTP(p func(string, ...any), s *Set) {
	p("\n## HTTP: a Server's methods over Connect and gRPC through httpzerodial\n\n")
	p("`zerodial-http-connect` (Connect JSON over HTTP/1.1) and `zerodial-http-grpc` (gRPC msgpack over h2c) call ")
	p("`httpzerodial.Handler` with connect-go's own client; `connect-native` and `connect-native-grpc` are connect-go ")
	p("serving the same call natively with protobuf over the same two; `grpc-tcp` is grpc-go (see ../README.md). ")
	p("The ÷ columns divide ns/op (below 1: faster than the reference).\n\n")
	p("A 16B call:\n\n")
	refTable(p, s, httpRows, func(r string) string { return unaryName(r, "16B") }, []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op"}, httpRefs)
	p("\nA stream of 10,000 16B messages:\n\n")
	refTable(p, s, httpRows, streamName, []string{"ns/op", "ns/msg", "allocs/msg", "B/op"}, httpRefs)
}
