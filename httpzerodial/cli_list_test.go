package httpzerodial_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/tcp"
)

// One Server that describes itself (describe.Register) and mounts
// Describe is listed the same by the command over HTTP and over the
// zerodial wire (tcp here; cmd/zerodial's tests show tcp and mux alike):
// one description, read two ways.
func TestCLIListEveryPath(t *testing.T) {
	command := cliCommand(t)
	srv := cliService(t)
	require.NoError(t, describe.Register(srv))
	url, _ := cliServer(t, srv, false)
	listen := func(tr transport.Transport) string {
		l, err := tr.Listen("127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, srv.Start(l))
		t.Cleanup(func() {
			srv.Close()
			tr.Close()
		})
		return l.Addr().String()
	}
	overHTTP := runCLI(t, command, "list", url)
	require.Equal(t, 0, overHTTP.code, overHTTP.stderr)
	assert.Contains(t, overHTTP.stdout, "Describe.Methods(describe.Request) describe.Description\n")
	assert.Contains(t, overHTTP.stdout, "Ticks.Count(httpzerodial_test.cliCount) stream httpzerodial_test.cliTick\n")
	assert.Equal(t, overHTTP, runCLI(t, command, "list", "-transport", "tcp", listen(tcp.New())))
}
