package httpzerodial_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/describe"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/tcp"
)

type cliBlob struct{ Data []byte }

type cliFiles struct {
	Main *cliBlob
	More []cliBlob
	Name string
}

// A []byte field given to the command as a JSON string is base64 on every
// path it calls: over HTTP, where the server's encoding/json reads it so,
// and over tcp (and mux: cmd/zerodial's tests), where the command decodes
// it itself, having asked the Server's description which fields are
// []byte. One Server, one call, one answer.
func TestCLIBytesEveryPath(t *testing.T) {
	command := cliCommand(t)
	srv := dispatch.NewServer()
	require.NoError(t, dispatch.Handle(srv, "Files.Names", func(ctx context.Context, f *cliFiles, r *[]string) error {
		*r = []string{""}
		if f.Main != nil {
			(*r)[0] = string(f.Main.Data)
		}
		for _, b := range f.More {
			*r = append(*r, string(b.Data))
		}
		*r = append(*r, f.Name)
		return nil
	}))
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
	args := `{"Main": {"Data": "aGk="}, "More": [{"Data": "eW8="}], "Name": "aGk="}`
	for name, flags := range map[string][]string{
		"http": {url},
		"tcp":  {"-transport", "tcp", listen(tcp.New())},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, command, append(append([]string{"call"}, flags...), "Files.Names", args)...)
			assert.Equal(t, cliResult{stdout: `["hi","yo","aGk="]` + "\n"}, r)
		})
	}
}
