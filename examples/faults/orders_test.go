package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/faultnet"
	"github.com/zerodial/transport/memory"
)

// TestInventoryPartition partitions Inventory's first replica from
// Orders for 30 s of fake time, while orders are placed four at a time
// every 250 ms, and checks that Orders rides it out: the reservations in
// flight when the partition reset their connection are retried on the
// other replica, the partitioned replica is left out, and, the partition
// healed, let back in and used again. No order fails. It runs in a
// testing/synctest bubble, over faultnet wrapping memory: 45 s of the
// bubble's time, well under a second of real time.
func TestInventoryPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two Inventory replicas, served on an in-process network.
		network := memory.New()
		inventory := []*Inventory{NewInventory(), NewInventory()}
		for i, inv := range inventory {
			srv := dispatch.NewServer()
			if err := inv.Register(srv); err != nil {
				t.Fatal(err)
			}
			l, err := network.Listen(fmt.Sprint("inventory-", i))
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(l); err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
		}

		// Orders dials them through a faulty network: one seed for every
		// random choice (printed if the test fails; FAULTNET_SEED=n
		// replays it), a millisecond of latency each way.
		faulty := faultnet.New(faultnet.TestSeed(t))
		faulty.Add(faultnet.Rule{Latency: time.Millisecond})
		tr := faulty.Wrap(network, "orders")
		defer tr.Close()
		orders, err := NewOrders(t.Context(), tr, "inventory-0", "inventory-1")
		if err != nil {
			t.Fatal(err)
		}
		defer orders.Close()

		// Orders are placed, four every 250 ms, for 45 s.
		start := time.Now()
		var mu sync.Mutex
		var placed []string
		var failed []error
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := 0; time.Since(start) < 45*time.Second; i++ {
					id := fmt.Sprintf("order-%d-%d", g, i)
					err := orders.Place(context.Background(), Reservation{Order: id, SKU: "sku-1", Qty: 1})
					mu.Lock()
					if err != nil {
						failed = append(failed, fmt.Errorf("%s at %v: %w", id, time.Since(start), err))
					} else {
						placed = append(placed, id)
					}
					mu.Unlock()
					time.Sleep(250*time.Millisecond - time.Since(start)%(250*time.Millisecond))
				}
			})
		}

		// At 5 s, with reservations in flight, inventory-0 is cut off for
		// 30 s: its connections reset, its dials refused.
		time.Sleep(5*time.Second + 20*time.Millisecond)
		faulty.Partition(faultnet.Partition{
			A: []string{"orders"}, B: []string{"inventory-0"},
			For: 30 * time.Second, Reset: true, Refuse: true,
		})
		time.Sleep(time.Second)
		st := orders.Inventory()[0]
		if st.In || !errors.Is(st.Why, transport.ErrConnectionRefused) {
			t.Errorf("inventory-0 a second into the partition: %+v; want it out, its dials refused", st)
		}
		during := inventory[0].Calls()
		time.Sleep(29 * time.Second) // the partition heals at 35 s
		if n := inventory[0].Calls(); n != during {
			t.Errorf("inventory-0 was asked for %d reservations across the partition", n-during)
		}
		healed := inventory[0].Calls()
		wg.Wait() // 45 s
		if !orders.Inventory()[0].In || inventory[0].Calls() == healed {
			t.Errorf("inventory-0 not used again after the heal: %+v", orders.Inventory()[0])
		}

		// Every order was placed; those whose reservation was in flight
		// on inventory-0 at the reset were retried on inventory-1.
		if len(failed) > 0 {
			t.Errorf("%d orders failed, the first: %v", len(failed), failed[0])
		}
		retried := 0
		for _, id := range placed {
			if !inventory[0].Reserved(id) && !inventory[1].Reserved(id) {
				t.Errorf("%s placed but not reserved", id)
			}
			if inventory[0].Asked(id) && inventory[1].Asked(id) {
				retried++
			}
		}
		if retried == 0 {
			t.Error("no reservation was retried on inventory-1")
		}
		t.Logf("%d orders placed over %v of the bubble's time, %d retried on inventory-1 after the reset; inventory-0 took %d calls, inventory-1 %d",
			len(placed), time.Since(start), retried, inventory[0].Calls(), inventory[1].Calls())
	})
}
