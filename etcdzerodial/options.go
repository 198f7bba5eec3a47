package etcdzerodial

import (
	"log/slog"
	"strings"
	"time"
)

// DefaultPrefix is the prefix of the keys under which servers are
// registered and looked up, when WithPrefix does not give another: a server
// of the service "Arith" at 10.0.0.7:7000 is the key
// "/zerodial/services/Arith/10.0.0.7:7000".
const DefaultPrefix = "/zerodial/services"

// DefaultTTL is the time to live of a registration's lease, when WithTTL
// does not give another: a server whose process dies is forgotten this long
// after its last keep-alive.
const DefaultTTL = 10 * time.Second

// Option configures Register and NewResolver. WithPrefix and WithLogger
// apply to both; WithTTL to Register alone (NewResolver ignores it).
type Option interface{ apply(*config) }

type config struct {
	prefix string
	ttl    time.Duration
	logger *slog.Logger
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithPrefix puts the keys under prefix instead of DefaultPrefix. A
// trailing slash is dropped; an empty prefix (or "/") means the keys are
// "/<service>/<addr>". Servers and their callers must use the same prefix.
func WithPrefix(prefix string) Option {
	return optionFunc(func(c *config) { c.prefix = strings.TrimRight(prefix, "/") })
}

// WithTTL sets the time to live of a registration's lease (DefaultTTL
// otherwise): how long a server stays registered after its process dies or
// loses etcd. etcd counts in whole seconds, so d is rounded up to whole
// seconds; it also grants no less than its own minimum (one and a half
// election timeouts: 1.5 s with its defaults, so 2 s). Zero or less keeps
// the default.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.ttl = d
		}
	})
}

// WithLogger sends diagnostics to l: a Registration's lost keep-alives,
// its attempts to register again and a withdrawal that failed; a Resolver's
// failed reads and restarted watches. By default they are discarded, as
// they are for a nil l.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}

func newConfig(opts []Option) config {
	c := config{prefix: DefaultPrefix, ttl: DefaultTTL, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// serviceDir is the key prefix of a service's servers, with its trailing
// slash, so that the service "a" does not take in the servers of "ab".
func (c config) serviceDir(service string) string {
	return c.prefix + "/" + service + "/"
}
