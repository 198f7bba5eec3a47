// Command zerodial calls the methods of a zerodial Server from a shell, as
// grpcurl does for gRPC: arguments are given in JSON and replies printed in
// JSON, so that no Go types are needed.
//
// It is a module of its own, github.com/zerodial/transport/cmd/zerodial,
// as it calls over HTTP through httpzerodial (and so connect-go), which
// the root module does not depend on. Install it from a clone of the
// repository with
//
//	cd cmd/zerodial && go install .
//
// (its go.mod replaces the modules it needs with the directories beside
// it, which "go install ...@version" refuses).
//
// Usage:
//
//	zerodial call   [flags] ADDR Service.Method [JSON]   call a method, print its reply
//	zerodial stream [flags] ADDR Service.Method [JSON]   follow a server stream, one JSON line a message
//	zerodial list   [flags] ADDR                         list the methods and their types
//	zerodial health [flags] ADDR [SERVICE]               check the health service (package health)
//
// Flags may come before, between or after the operands; "--" ends them,
// for a JSON argument that begins with "-" (a negative number). JSON
// defaults to {}. ADDR is host:port for the zerodial wire (-transport
// tcp or mux, mux the default), or a URL (http:// or https://) of a Server
// served by httpzerodial, called through httpzerodial's Client (Dial) in
// the Connect protocol over HTTP/1.1, which every HTTP server and proxy
// takes. Flags:
//
//	-transport tcp|mux|http  the path; http is inferred from a URL
//	-tls                     speak TLS (implied by -cacert, -cert and an https URL)
//	-cacert FILE             PEM certificates to trust instead of the system's
//	-cert FILE, -key FILE    a client certificate and its key (mutual TLS)
//	-servername NAME         the name the server's certificate must have
//	-timeout D               bound the whole command (10s by default, none for stream; 0 for none)
//	-H key:value             metadata of the call (a request header over HTTP); repeatable
//	-describe PATH           where list finds httpzerodial.Describe over HTTP ("/describe")
//
// Over the zerodial wire the arguments are sent as msgpack maps, which a
// handler decodes into its argument type by field name (Go's field names,
// or msgpack tags); whole numbers (2, 2.0, 1e3) are sent as integers, which int and
// float fields both take, others as floats. The
// reply is decoded without its type and printed as JSON: maps with keys
// other than strings get their keys printed as strings, byte slices become
// base64 strings. Over HTTP the JSON goes as it is, and the server decodes
// it with encoding/json.
//
// Bytes: a []byte field is given as a JSON string in base64, as
// encoding/json reads it ({"Data": "aGk="} is the bytes "hi"), on every
// path. Over HTTP the server applies the rule; over tcp and mux the
// command does, having asked the Server's description (describe.Register,
// one call more when the arguments hold a string) which fields are []byte,
// and exits 2 when such a string is not base64. A Server that does not
// describe itself cannot say which fields are []byte: its strings are sent
// as strings, and a []byte field then takes a string's own bytes.
//
// list prints each method with its argument and reply types, then the
// structs they name, from the description package describe makes: over
// tcp or mux it calls Describe.Methods, which a Server answers when its
// program calls describe.Register(srv); over HTTP it reads
// httpzerodial.Describe, mounted beside the Handler. Both print the same.
// A gRPC method registered through grpczerodial is listed with its
// protobuf messages and its gRPC name, "Pkg.Svc.M(protobuf pkg.Req)
// protobuf pkg.Res  # gRPC method /pkg.Svc/M"; its bodies are protobuf,
// which call does not write: call it with a gRPC client, or over HTTP.
// A Server that does not describe itself exits 1 with not_found and says
// how to make it do so.
//
// health prints the status (SERVING, NOT_SERVING, ...) and exits 0 only
// when it is SERVING; a status other than SERVING exits 1.
//
// Exit codes, for scripts:
//
//	0    the call succeeded
//	1    the server answered with an error (printed on stderr as "code: message")
//	2    usage: bad flags, arguments or JSON
//	3    the server could not be reached, or the connection failed
//	4    the deadline (-timeout) passed
//	130  interrupted (SIGINT, Ctrl-C), as a stream followed without end is stopped
//
// Every error is printed on stderr as one line.
package main
