package resolver_test

import (
	"fmt"
	"log"
	"time"

	"github.com/zerodial/transport/resolver"
)

// Default picks the resolver by the target's scheme; a static list is
// reported once, before Resolve returns.
func ExampleSchemes() {
	w, err := resolver.Default.Resolve("static:///10.0.0.1:7000,10.0.0.2:7000", func(addrs []string, err error) {
		fmt.Println(addrs, err)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	// Output: [10.0.0.1:7000 10.0.0.2:7000] <nil>
}

// Following the pods of a Kubernetes headless Service through its SRV
// records, re-resolved every 10 seconds, and at most once a second on
// Refresh. The target "svc.ns.svc.cluster.local:7000" would follow its A
// and AAAA records instead, with port 7000.
func ExampleDNS() {
	dns := resolver.DNS{Interval: 10 * time.Second, MinRefresh: time.Second}
	w, err := dns.Resolve("_grpc._tcp.svc.ns.svc.cluster.local", func(addrs []string, err error) {
		if err != nil {
			log.Print(err) // keep calling the replicas known
			return
		}
		log.Print("replicas: ", addrs)
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	// ... when a call to a replica fails:
	w.Refresh()
}
