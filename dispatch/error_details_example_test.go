package dispatch_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
)

// QuotaFailure says which limit a call ran into: a detail a caller can act
// on, where the message is for people.
type QuotaFailure struct {
	Limit      string
	RetryAfter time.Duration
}

// errOverQuota is a sentinel error; WithDetail gives a copy of it details.
var errOverQuota = &dispatch.Error{Code: dispatch.CodeResourceExhausted, Message: "quota: over the limit"}

// A handler attaches a typed detail to its *Error; the caller reads it back
// as the same type, over the network and through the shortcut.
func ExampleErrorDetailAs() {
	ctx := context.Background()
	srv := dispatch.NewServer()
	defer srv.Close()
	err := dispatch.Handle(srv, "Quota.Use", func(ctx context.Context, n *int, reply *int) error {
		return errOverQuota.WithDetail(QuotaFailure{Limit: "writes per minute", RetryAfter: 30 * time.Second})
	})
	if err != nil {
		log.Fatal(err)
	}
	tr := memory.New()
	l, err := tr.Listen("quota")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(l); err != nil {
		log.Fatal(err)
	}
	for _, mode := range []dispatch.ShortcutMode{dispatch.ShortcutOff, dispatch.ShortcutCopy} {
		c, err := dispatch.Dial(ctx, tr, "quota", dispatch.WithShortcut(mode))
		if err != nil {
			log.Fatal(err)
		}
		err = c.Call(ctx, "Quota.Use", 1, new(int))
		q, ok := dispatch.ErrorDetailAs[QuotaFailure](err)
		fmt.Println(mode, err, ok, q.Limit, q.RetryAfter)
		c.Close()
	}
	// Output:
	// off quota: over the limit true writes per minute 30s
	// copy quota: over the limit true writes per minute 30s
}
