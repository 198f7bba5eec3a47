package grpczerodial_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/memory"
)

// gRPC's health service, as grpc-go generates and implements it, served on
// a dispatch.Server and called with its generated client over the
// shortcut: two lines change, one at registration and one at dial.
func Example() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	reg := grpczerodial.NewRegistrar(srv)                  // in place of grpc.NewServer()
	healthpb.RegisterHealthServer(reg, health.NewServer()) // generated code, unchanged

	tr := memory.New() // or tcp.New(), mux.New()
	defer tr.Close()
	l, err := tr.Listen("")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := dispatch.Dial(ctx, tr, l.Addr().String(), dispatch.WithShortcut(dispatch.ShortcutCopy))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	health := healthpb.NewHealthClient(grpczerodial.NewClientConn(c)) // in place of grpc.NewClient(...)

	res, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(res.GetStatus(), err)
	_, err = health.Check(ctx, &healthpb.HealthCheckRequest{Service: "orders"})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	// Output:
	// SERVING <nil>
	// NotFound unknown service
}
