module github.com/zerodial/transport/cmd/zerodial

go 1.26.0

replace (
	github.com/zerodial/transport => ../../
	github.com/zerodial/transport/httpzerodial => ../../httpzerodial
)

require (
	github.com/stretchr/testify v1.12.1
	github.com/vmihailenco/msgpack/v5 v5.4.1
	github.com/zerodial/transport v0.0.0-00010101000000-000000000000
	github.com/zerodial/transport/httpzerodial v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	connectrpc.com/connect v1.21.1 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
