// Package faults is a user's two services, Orders and Inventory, and the
// test that partitions Inventory from Orders for 30 s of fake time
// (orders_test.go): how to test a distributed service's retries, ejection
// and recovery deterministically with faultnet and testing/synctest. The
// services are ordinary zerodial code; only the test knows of the faults.
package faults

import (
	"context"
	"sync"
	"time"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/resolver"
)

// Reservation asks Inventory to hold Qty of SKU for an order.
type Reservation struct {
	Order string
	SKU   string
	Qty   int
}

// Inventory holds stock for orders. Reserve is idempotent: a reservation
// is keyed by its order, so a retry of one that already ran changes
// nothing, which is what lets Orders retry it after a connection failure.
type Inventory struct {
	mu       sync.Mutex
	reserved map[string]Reservation
	asked    map[string]bool // the orders it was asked to reserve
	calls    int
}

// NewInventory returns an Inventory with nothing reserved.
func NewInventory() *Inventory {
	return &Inventory{reserved: map[string]Reservation{}, asked: map[string]bool{}}
}

// Register serves Inventory.Reserve on srv. Each reservation takes 50 ms
// (a write to its store).
func (inv *Inventory) Register(srv *dispatch.Server) error {
	return dispatch.Handle(srv, "Inventory.Reserve", func(ctx context.Context, r *Reservation, ok *bool) error {
		inv.mu.Lock()
		inv.calls++
		inv.asked[r.Order] = true
		inv.mu.Unlock()
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		inv.mu.Lock()
		inv.reserved[r.Order] = *r
		inv.mu.Unlock()
		*ok = true
		return nil
	})
}

// Calls returns how many reservations the Inventory was asked for.
func (inv *Inventory) Calls() int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.calls
}

// Asked reports whether the Inventory was asked to reserve order's stock.
func (inv *Inventory) Asked(order string) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.asked[order]
}

// Reserved reports whether order's reservation is held.
func (inv *Inventory) Reserved(order string) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	_, ok := inv.reserved[order]
	return ok
}

// Orders places orders, reserving their stock in Inventory, whose
// replicas it reaches over tr at addrs.
type Orders struct {
	inventory *dispatch.Client
}

// NewOrders dials Inventory's replicas over tr: round-robin, a replica
// left out after 3 failures for 1 s (doubling while it still fails), and
// Inventory.Reserve marked idempotent, so that a call whose connection
// fails mid-call is retried on another replica.
func NewOrders(ctx context.Context, tr transport.Transport, addrs ...string) (*Orders, error) {
	c, err := dispatch.Dial(ctx, tr, "inventory", dispatch.WithResolver(resolver.Static{Addrs: addrs}),
		dispatch.WithIdempotent("Inventory.Reserve"))
	if err != nil {
		return nil, err
	}
	return &Orders{inventory: c}, nil
}

// Place reserves an order's stock, giving Inventory 2 s.
func (o *Orders) Place(ctx context.Context, r Reservation) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var ok bool
	return o.inventory.Call(ctx, "Inventory.Reserve", r, &ok)
}

// Inventory returns the state of the Inventory replicas as Orders sees
// them: which are in, which are out, until when and why.
func (o *Orders) Inventory() []dispatch.ReplicaState { return o.inventory.Replicas() }

// Close closes Orders' connections.
func (o *Orders) Close() error { return o.inventory.Close() }
