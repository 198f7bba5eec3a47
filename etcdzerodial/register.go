package etcdzerodial

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerodial/transport/dispatch"
)

// Registration is a server's entry in etcd: the key
// <prefix>/<service>/<addr>, whose value is addr, bound to a lease that the
// Registration keeps alive. Make one with Register; withdraw it with Close,
// or by stopping the Server it was made for.
type Registration struct {
	cli    *clientv3.Client
	key    string
	addr   string
	ttl    time.Duration // as granted: whole seconds
	logger *slog.Logger

	ctx    context.Context // canceled by Close: ends run and its requests
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	// lease is the lease the key was last put under: set by Register,
	// then owned by run, and read by Close once run has returned.
	lease clientv3.LeaseID

	closeOnce sync.Once
	closeErr  error
}

// Register registers the server srv, serving service at addr, in etcd: it
// puts the key <prefix>/<service>/<addr> (DefaultPrefix unless WithPrefix),
// with addr as its value, under a new lease of WithTTL's time to live
// (DefaultTTL), and returns once the key is there. Call it after srv.Start,
// so that callers who find the key find the server serving.
//
// The lease is then kept alive, on a goroutine of the Registration's own,
// for as long as the process lives and the Registration is not closed: if
// the process dies, the lease expires and etcd deletes the key. If the
// keep-alives stop getting through for longer than the time to live (etcd
// was unreachable, or lost the lease), the lease is taken as lost and the
// key is put again under a new lease, retried with backoff until etcd
// answers: a server outlives an outage of etcd and is found again when it
// ends.
//
// The registration is withdrawn — the lease revoked, and its key deleted
// with it — when srv's Shutdown or Close begins (Register hands
// Registration.Close to srv.RegisterOnShutdown), so that callers stop
// choosing the server while it drains, or when the Registration's Close is
// called. srv's Shutdown returns only once the key is gone (or its ctx has
// ended), so a process may exit as soon as Shutdown returns; srv's Close
// starts the withdrawal and does not wait for it. srv may be nil, for an
// address served some other way; then only Close withdraws it.
//
// ctx bounds the registering alone (the lease's grant and the put), not the
// Registration's life. service must be non-empty and hold no '/'; addr
// must be non-empty. cli must stay open while the Registration lives:
// closing it stops the keep-alives, as a dying process does.
func Register(ctx context.Context, cli *clientv3.Client, srv *dispatch.Server, service, addr string, opts ...Option) (*Registration, error) {
	if cli == nil {
		return nil, errors.New("etcdzerodial: Register: nil etcd client")
	}
	if err := cli.Ctx().Err(); err != nil {
		return nil, fmt.Errorf("etcdzerodial: Register: the etcd client is closed: %w", err)
	}
	if err := checkService(service); err != nil {
		return nil, err
	}
	if addr == "" {
		return nil, fmt.Errorf("etcdzerodial: service %q: empty address", service)
	}
	c := newConfig(opts)
	r := &Registration{
		cli:    cli,
		key:    c.serviceDir(service) + addr,
		addr:   addr,
		ttl:    c.ttl.Round(time.Second),
		logger: c.logger.With("key", c.serviceDir(service)+addr),
		done:   make(chan struct{}),
	}
	if r.ttl < c.ttl {
		r.ttl += time.Second
	}
	lease, err := r.put(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcdzerodial: registering %s: %w", r.key, err)
	}
	r.lease = lease
	r.ctx, r.cancel = context.WithCancel(context.Background())
	ka, err := cli.KeepAlive(r.ctx, lease)
	if err != nil { // the client is closed
		r.cancel()
		close(r.done)
		r.revoke()
		return nil, fmt.Errorf("etcdzerodial: registering %s: %w", r.key, err)
	}
	go r.run(ka)
	if srv != nil {
		srv.RegisterOnShutdown(func() {
			if err := r.Close(); err != nil {
				r.logger.Warn("etcdzerodial: withdrawing the registration as the server stops", "err", err)
			}
		})
	}
	return r, nil
}

// checkService refuses a service name that would not make one level of
// keys: empty, or holding a '/'.
func checkService(service string) error {
	if service == "" {
		return errors.New("etcdzerodial: empty service name")
	}
	if strings.Contains(service, "/") {
		return fmt.Errorf("etcdzerodial: service name %q holds a '/'", service)
	}
	return nil
}

// Key returns the registration's key, <prefix>/<service>/<addr>.
func (r *Registration) Key() string { return r.key }

// Close withdraws the registration: it stops the keep-alives and revokes
// the lease, which deletes the key, and returns once etcd has done so or
// failed to. etcd being unreachable, it gives up after the lease's time to
// live, when the key has gone by itself (and says so with an error). A
// lease already gone (expired) is no error. Close may be called more than
// once, and concurrently; every call returns when the first is done, with
// its result.
func (r *Registration) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		<-r.done
		r.closeErr = r.revoke()
	})
	return r.closeErr
}

// revoke revokes r.lease, which deletes the key, waiting no longer than
// the lease would have lived anyway.
func (r *Registration) revoke() error {
	if err := r.cli.Ctx().Err(); err != nil {
		// A closed client has nothing to say it with (and would not
		// fail at once).
		return fmt.Errorf("etcdzerodial: withdrawing %s (the key goes when its lease expires): the etcd client is closed: %w", r.key, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.ttl)
	defer cancel()
	_, err := r.cli.Revoke(ctx, r.lease)
	if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return fmt.Errorf("etcdzerodial: withdrawing %s (the key goes when its lease expires): %w", r.key, err)
}

// put grants a lease and puts the key under it.
func (r *Registration) put(ctx context.Context) (clientv3.LeaseID, error) {
	lease, err := r.cli.Grant(ctx, int64(r.ttl/time.Second))
	if err != nil {
		return 0, fmt.Errorf("granting a lease: %w", err)
	}
	if _, err := r.cli.Put(ctx, r.key, r.addr, clientv3.WithLease(lease.ID)); err != nil {
		// The lease expires by itself; revoke it sooner if etcd answers.
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = r.cli.Revoke(rctx, lease.ID)
		cancel()
		return 0, fmt.Errorf("putting the key: %w", err)
	}
	return lease.ID, nil
}

// The backoff between attempts to register again.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 3 * time.Second
)

// run keeps the lease alive, reading the keep-alive answers as they come,
// and registers again under a new lease when the keep-alives end without
// Close: the lease is lost.
func (r *Registration) run(ka <-chan *clientv3.LeaseKeepAliveResponse) {
	defer close(r.done)
	for {
		for range ka {
		}
		// The keep-alives ended: Close (r.ctx), the client's closing, the
		// lease's expiry on etcd's side, or no answer for a whole TTL.
		if r.ctx.Err() != nil {
			return
		}
		if r.cli.Ctx().Err() != nil {
			r.logger.Warn("etcdzerodial: the etcd client is closed; the key goes when its lease expires")
			return
		}
		r.logger.Warn("etcdzerodial: the lease's keep-alives stopped; registering again", "lease", int64(r.lease))
		var ok bool
		if ka, ok = r.again(); !ok {
			return
		}
	}
}

// again puts the key under a new lease, retrying with backoff until it is
// done or Close is called (ok false), and starts the new lease's
// keep-alives.
func (r *Registration) again() (ka <-chan *clientv3.LeaseKeepAliveResponse, ok bool) {
	old := r.lease
	wait := retryMin
	for attempt := 1; ; attempt++ {
		// The client's requests wait for its connection to come back: a
		// long bound lets the attempt succeed as soon as it does.
		ctx, cancel := context.WithTimeout(r.ctx, max(r.ttl, 5*time.Second))
		lease, err := r.put(ctx)
		cancel()
		if err == nil {
			r.lease = lease
			ka, err = r.cli.KeepAlive(r.ctx, lease)
			if err != nil { // Close, or the client is closed
				return nil, false
			}
			r.logger.Info("etcdzerodial: registered again", "lease", int64(lease), "attempts", attempt)
			// The old lease, if etcd still has it, no longer holds the
			// key: let it go now rather than at its expiry.
			rctx, cancel := context.WithTimeout(r.ctx, time.Second)
			_, _ = r.cli.Revoke(rctx, old)
			cancel()
			return ka, true
		}
		if r.ctx.Err() != nil || r.cli.Ctx().Err() != nil {
			return nil, false
		}
		r.logger.Warn("etcdzerodial: registering again failed; retrying", "err", err, "attempt", attempt, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
		// Double, with a little jitter so that servers restarted together
		// do not retry in step.
		wait = min(2*wait, retryMax)
		wait += time.Duration(rand.Int64N(int64(wait / 5)))
	}
}
