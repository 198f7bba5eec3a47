//go:build linux

package dispatch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/tcp"
)

// A handler that serves its own user alone, told by the credentials the
// kernel gives of a unix socket's peer (docs/unix.md; Linux).
func ExampleCallInfo_peerCred() {
	srv := dispatch.NewServer()
	defer srv.Close()
	dispatch.Handle(srv, "Admin.Ping", func(ctx context.Context, _ *struct{}, reply *string) error {
		info, _ := dispatch.CallInfoFrom(ctx)
		if info.PeerCred == nil || info.PeerCred.UID != os.Getuid() {
			return &dispatch.Error{Code: dispatch.CodePermissionDenied, Message: "only my own user may call"}
		}
		*reply = "pong"
		return nil
	})

	dir, _ := os.MkdirTemp("", "zd")
	defer os.RemoveAll(dir)
	tr := tcp.New()
	defer tr.Close()
	l, err := tr.Listen("unix:" + filepath.Join(dir, "admin.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.Start(l)

	c, err := dispatch.Dial(context.Background(), tr, "unix:"+filepath.Join(dir, "admin.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	var reply string
	err = c.Call(context.Background(), "Admin.Ping", struct{}{}, &reply)
	fmt.Println(reply, err)
	// Output: pong <nil>
}
