package grpczerodial

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zerodial/transport/dispatch"
)

// bodies says what a gRPC method's raw bodies hold, for the listings of a
// Server's methods (describe, rpcdebug, cmd/zerodial's list): protobuf, its
// messages' full names as the service's descriptor in protobuf's registry
// gives them (generated code registers it; none when it is not there), and
// the method's gRPC name.
func bodies(service, method string) dispatch.RegisterOption {
	e := dispatch.Encoding{Name: "protobuf", Origin: "gRPC method /" + service + "/" + method}
	if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service)); err == nil {
		if sd, ok := d.(protoreflect.ServiceDescriptor); ok {
			if md := sd.Methods().ByName(protoreflect.Name(method)); md != nil {
				e.Args, e.Reply = string(md.Input().FullName()), string(md.Output().FullName())
			}
		}
	}
	return dispatch.WithEncoding(e)
}
