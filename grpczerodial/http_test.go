package grpczerodial_test

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/interop"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/grpczerodial"
	"github.com/zerodial/transport/httpzerodial"
)

// httpPath is one way grpc-go's own client reaches services registered
// through a Registrar over the network: httpzerodial's Handler in an
// httptest server, over HTTP/2 without TLS (h2c) or with it.
type httpPath struct {
	name string
	tls  bool
}

var httpPaths = []httpPath{{"h2c", false}, {"tls", true}}

// serveHTTP serves srv through httpzerodial's Handler on p and returns a
// grpc-go ClientConn dialled to it.
func serveHTTP(t *testing.T, p httpPath, srv *dispatch.Server) *grpc.ClientConn {
	t.Helper()
	ts := httptest.NewUnstartedServer(httpzerodial.NewHandler(srv))
	creds := insecure.NewCredentials()
	if p.tls {
		ts.EnableHTTP2 = true
		ts.StartTLS()
		pool := x509.NewCertPool()
		pool.AddCert(ts.Certificate())
		creds = credentials.NewClientTLSFromCert(pool, "example.com")
	} else {
		ts.Config.Protocols = httpzerodial.Protocols()
		ts.Start()
	}
	target := strings.TrimPrefix(strings.TrimPrefix(ts.URL, "http://"), "https://")
	conn, err := grpc.NewClient("passthrough:///"+target, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Close()
		ts.Close()
		srv.Close()
	})
	return conn
}

// gRPC's interop cases and its health service, run by grpc-go's own
// client over HTTP (h2c and TLS) against interop.NewTestServer registered
// through a Registrar and served by httpzerodial's Handler: the same
// services, unchanged, that the generated client calls over every
// zerodial path (TestInterop).
func TestInteropOverHTTP(t *testing.T) {
	for _, p := range httpPaths {
		t.Run(p.name, func(t *testing.T) {
			srv := dispatch.NewServer()
			reg := grpczerodial.NewRegistrar(srv)
			testpb.RegisterTestServiceServer(reg, interop.NewTestServer())
			hs := health.NewServer()
			healthpb.RegisterHealthServer(reg, hs)
			conn := serveHTTP(t, p, srv)
			tc := testpb.NewTestServiceClient(conn)
			for _, c := range interopCases {
				t.Run(c.name, func(t *testing.T) { c.do(context.Background(), tc) })
			}
			t.Run("unimplemented_service", func(t *testing.T) {
				interop.DoUnimplementedService(context.Background(), testpb.NewUnimplementedServiceClient(conn))
			})
			t.Run("unimplemented_method", func(t *testing.T) {
				interop.DoUnimplementedMethod(context.Background(), conn)
			})
			t.Run("health", func(t *testing.T) {
				hs.SetServingStatus("grpc.testing.TestService", healthpb.HealthCheckResponse_NOT_SERVING)
				res, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "grpc.testing.TestService"})
				require.NoError(t, err)
				assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, res.GetStatus())
			})
		})
	}
}

// A gRPC method called over HTTP in JSON is refused, saying that its
// messages are protobuf: it answered with the fields of the body that
// carries them inside (Msg, Enc, Buf), and took them from the request.
func TestGRPCMethodRefusesJSON(t *testing.T) {
	srv := dispatch.NewServer()
	testpb.RegisterTestServiceServer(grpczerodial.NewRegistrar(srv), interop.NewTestServer())
	ts := httptest.NewServer(httpzerodial.NewHandler(srv))
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	res, err := http.Post(ts.URL+"/grpc.testing.TestService/UnaryCall", "application/json", strings.NewReader(`{"Enc":"CAE="}`))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "%s", b)
	assert.Contains(t, string(b), "messages are protobuf")
	assert.NotContains(t, string(b), `"Msg"`)
}
