package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHTTP(t *testing.T) {
	s, err := Parse(strings.NewReader(`BenchmarkUnary/zerodial-http-connect/16B-2 	10000	 60000 ns/op	 9000 B/op	 120 allocs/op
BenchmarkUnary/zerodial-http-grpc/16B-2 	10000	 90000 ns/op	 9000 B/op	 150 allocs/op
BenchmarkUnary/connect-native/16B-2 	10000	 40000 ns/op	 7000 B/op	 90 allocs/op
BenchmarkUnary/connect-native-grpc/16B-2 	10000	 45000 ns/op	 50000 cpu-ns/op	 8000 B/op	 100 allocs/op
BenchmarkUnary/grpc-tcp/16B-2 	10000	 30000 ns/op	 5000 B/op	 100 allocs/op
BenchmarkStream/zerodial-http-connect-2 	10	 20000000 ns/op	 2000 ns/msg	 8.5 allocs/msg	 900000 B/op	 85000 allocs/op
BenchmarkStream/connect-native-2 	10	 10000000 ns/op	 1000 ns/msg	 4 allocs/msg	 500000 B/op	 40000 allocs/op
BenchmarkStream/grpc-tcp-2 	10	 5000000 ns/op	 500 ns/msg	 2 allocs/msg	 300000 B/op	 20000 allocs/op
`))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, s, Machine{Count: 1}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## HTTP: a Server's methods over Connect and gRPC through httpzerodial",
		"| impl | ns/op | cpu-ns/op | B/op | allocs/op | ÷ connect-native | ÷ connect-native-grpc | ÷ grpc-tcp |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
		"| zerodial-http-connect | 60,000 | — | 9,000 | 120 | 1.50× | 1.33× | 2.00× |",
		"| zerodial-http-grpc | 90,000 | — | 9,000 | 150 | 2.25× | 2.00× | 3.00× |",
		"| connect-native | 40,000 | — | 7,000 | 90 | 1.00× | 0.89× | 1.33× |",
		"| connect-native-grpc | 45,000 | 50,000 | 8,000 | 100 | 1.12× | 1.00× | 1.50× |",
		"| impl | ns/op | ns/msg | allocs/msg | B/op | ÷ connect-native | ÷ connect-native-grpc | ÷ grpc-tcp |",
		"| zerodial-http-connect | 20,000,000 | 2,000 | 8.5 | 900,000 | 2.00× | — | 4.00× |",
		// No stream row of gRPC through httpzerodial in this run.
		"| zerodial-http-grpc | — | — | — | — | — | — | — |",
		// The rows are in the unary table too.
		"| zerodial-http-connect | 60,000 | 9,000 | 120 | — |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}
}
