package grpczerodial_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/httpzerodial"
)

// The services a Registrar registers are reachable over HTTP too, through
// httpzerodial's Handler: grpc-go's own client and connect-go's, with the
// generated messages, reach the handler that the generated client calls in
// process (Example).
func Example_http() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	reg := grpczerodial.NewRegistrar(srv)
	healthpb.RegisterHealthServer(reg, health.NewServer())
	defer srv.Close()

	// The same Server over HTTP: gRPC's paths, protobuf bodies, h2c or TLS.
	ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	ts.Config.Protocols = httpzerodial.Protocols()
	ts.Start()
	defer ts.Close()

	// grpc-go's client, over the network.
	conn, err := grpc.NewClient(strings.TrimPrefix(ts.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(res.GetStatus(), err)

	// connect-go's client, the Connect protocol over HTTP/1.1.
	check := connect.NewClient[healthpb.HealthCheckRequest, healthpb.HealthCheckResponse](ts.Client(), ts.URL+"/grpc.health.v1.Health/Check")
	cres, err := check.CallUnary(ctx, connect.NewRequest(&healthpb.HealthCheckRequest{}))
	fmt.Println(cres.Msg.GetStatus(), err)
	_, err = check.CallUnary(ctx, connect.NewRequest(&healthpb.HealthCheckRequest{Service: "orders"}))
	fmt.Println(connect.CodeOf(err), err)
	// Output:
	// SERVING <nil>
	// SERVING <nil>
	// not_found not_found: unknown service
}
