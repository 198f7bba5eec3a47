package etcdzerodial

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerodial/transport/resolver"
)

// Resolver follows the servers registered in etcd (by Register, or by
// anything that puts keys of the same shape: <prefix>/<service>/<addr>,
// each with the address as its value). It is a resolver.Resolver whose
// target is the service's name: give it to a dispatch Client
// (dispatch.WithResolver), or put it in a resolver.Schemes under "etcd"
// for targets such as "etcd:///Arith".
type Resolver struct {
	cli    *clientv3.Client
	prefix string
	logger *slog.Logger
}

// NewResolver returns a Resolver reading through cli, which must stay open
// while the Resolver's Watches are. Of the options, WithPrefix and
// WithLogger apply.
func NewResolver(cli *clientv3.Client, opts ...Option) *Resolver {
	c := newConfig(opts)
	return &Resolver{cli: cli, prefix: c.prefix, logger: c.logger}
}

// The bound of one read (Get) of a service's keys.
const readTimeout = 5 * time.Second

// Resolve begins following the servers of the service target, and returns
// at once; it fails only for a name Register would refuse (empty, or
// holding a '/'). On a goroutine of the Watch's own it reads the service's
// keys, reports their addresses, and then watches the keys from the
// revision it read, reporting the whole set again each time it changes.
// A watch that etcd ends (its revision compacted away, the member without
// a leader) is made again after a fresh read; so is one that Refresh
// replaces. A read that fails is reported as an error and retried with
// backoff (but once the etcd client is closed, its error is the last
// report); a service with no server at all is reported as an error
// wrapping resolver.ErrNoAddresses, the caller keeping the set it had.
//
// The set is reported sorted, each time it differs from the last reported,
// and after an error once a read succeeds again. report must not call the
// Watch's Close, which waits for report to return; it may call Refresh.
func (r *Resolver) Resolve(target string, report func([]string, error)) (resolver.Watch, error) {
	if r.cli == nil {
		return nil, errors.New("etcdzerodial: Resolver without an etcd client (use NewResolver)")
	}
	if err := checkService(target); err != nil {
		return nil, err
	}
	w := &watch{
		cli:     r.cli,
		logger:  r.logger.With("service", target),
		service: target,
		dir:     r.prefix + "/" + target + "/",
		report:  report,
		refresh: make(chan struct{}, 1),
		done:    make(chan struct{}),
		servers: map[string]string{},
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.run()
	return w, nil
}

type watch struct {
	cli     *clientv3.Client
	logger  *slog.Logger
	service string
	dir     string // the keys' prefix, with its trailing slash
	report  func([]string, error)

	ctx     context.Context // canceled by Close: ends run and its requests
	cancel  context.CancelFunc
	refresh chan struct{} // one slot: Refreshes not yet seen by run are one
	done    chan struct{} // closed when run returns

	// Owned by run.
	servers map[string]string // address by key
	last    []string          // the set last reported; nil before the first
	failed  bool              // the last report was an error
}

// Refresh reads the service's keys again, and watches them anew from there.
// It never blocks.
func (w *watch) Refresh() {
	select {
	case w.refresh <- struct{}{}:
	default: // one is pending already
	}
}

// Close stops following the service and waits for the goroutine that
// reports.
func (w *watch) Close() error {
	w.cancel()
	<-w.done
	return nil
}

// testHookRead, when set, is called after each successful read, before the
// watch from its revision is made.
var testHookRead func()

func (w *watch) run() {
	defer close(w.done)
	wait := retryMin
	for {
		if err := w.cli.Ctx().Err(); err != nil {
			// Nothing more can be read: say so, once.
			w.fail(fmt.Errorf("etcdzerodial: following %q: the etcd client is closed: %w", w.service, err))
			<-w.ctx.Done()
			return
		}
		rev, err := w.read()
		if w.ctx.Err() != nil {
			return
		}
		if err != nil {
			if w.cli.Ctx().Err() != nil {
				continue
			}
			w.fail(fmt.Errorf("etcdzerodial: reading the servers of %q: %w", w.service, err))
			if !w.sleep(wait) {
				return
			}
			wait = min(2*wait, retryMax)
			continue
		}
		w.publish()
		if testHookRead != nil {
			testHookRead()
		}
		if !w.follow(rev) {
			return
		}
		wait = retryMin
	}
}

// read gets the service's keys, and returns the revision they were read at.
func (w *watch) read() (rev int64, err error) {
	ctx, cancel := context.WithTimeout(w.ctx, readTimeout)
	defer cancel()
	resp, err := w.cli.Get(ctx, w.dir, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	clear(w.servers)
	for _, kv := range resp.Kvs {
		w.servers[string(kv.Key)] = string(kv.Value)
	}
	return resp.Header.Revision, nil
}

// follow watches the service's keys from the revision after rev, reporting
// each change, until the watch ends, Refresh is called (true, for run to
// read again) or Close (false).
func (w *watch) follow(rev int64) bool {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(w.ctx))
	defer cancel()
	events := w.cli.Watch(ctx, w.dir, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		select {
		case <-w.ctx.Done():
			return false
		case <-w.refresh:
			return true
		case resp, ok := <-events:
			switch {
			case !ok:
				if w.ctx.Err() != nil {
					return false
				}
				if w.cli.Ctx().Err() != nil {
					return true // run says the client is closed
				}
				w.logger.Info("etcdzerodial: the watch ended; reading again")
				return w.sleep(retryMin)
			case resp.CompactRevision != 0:
				w.logger.Info("etcdzerodial: the watch's revision was compacted; reading again", "revision", rev+1, "compacted", resp.CompactRevision)
				return true
			case resp.Err() != nil, resp.Canceled:
				w.logger.Warn("etcdzerodial: the watch failed; reading again", "err", resp.Err())
				return w.sleep(retryMin)
			}
			for _, ev := range resp.Events {
				switch ev.Type {
				case mvccpb.PUT:
					w.servers[string(ev.Kv.Key)] = string(ev.Kv.Value)
				case mvccpb.DELETE:
					delete(w.servers, string(ev.Kv.Key))
				}
			}
			if len(resp.Events) > 0 {
				w.publish()
			}
		}
	}
}

// publish reports the set of addresses, if it is new.
func (w *watch) publish() {
	addrs := make([]string, 0, len(w.servers))
	for key, a := range w.servers {
		if a == "" {
			a = key[len(w.dir):] // a key put by hand, without a value
		}
		if a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		w.fail(fmt.Errorf("etcdzerodial: service %q: %w", w.service, resolver.ErrNoAddresses))
		return
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	if w.last != nil && !w.failed && slices.Equal(addrs, w.last) {
		return
	}
	w.last, w.failed = addrs, false
	w.report(slices.Clone(addrs), nil) // the caller may keep or change its copy
}

func (w *watch) fail(err error) {
	w.failed = true
	w.logger.Debug("etcdzerodial: reporting an error", "err", err)
	w.report(nil, err)
}

// sleep waits for d, or less if Refresh is called; false if Close is.
func (w *watch) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-w.refresh:
		return true
	case <-t.C:
		return true
	}
}
