// Package warrentest runs warren's generated publishers, consumers,
// ordered consumers, stream consumers (their offsets kept in the bus),
// requesters, responders and outbox relays in the test
// process, on an in-process broker with RabbitMQ's semantics: the same
// topology routes the facts, the same generated code validates and decodes
// them, a failing handler walks its consumer's real retry ladder into its
// poison lane, and the idempotency guard, priorities, bounded queues and
// request deadlines behave as in production. A test swaps the address the
// service dials, not the code under test.
//
// [Run] runs a test in virtual time (a testing/synctest bubble): a retry
// ladder of minutes takes microseconds, and [Bus.Idle] advances the clock
// until nothing is left to do. [New] runs in real time, for code that
// must not be bubbled (a real database, another process).
//
// Each generated package has a kit beside it (package <pkg>test) with
// typed helpers built on this package.
//
// What the bus does not simulate: broker restarts and node loss (nothing
// survives the test; [Bus.DropConnections] cuts connections and keeps the
// queues), resource alarms, several vhosts, plugins being off, a stream's
// retention, and the network's latency.
package warrentest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/membroker"
	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Scheme is the URL scheme of an in-process bus: [Bus.URL] returns
// "warrentest://<id>/", which runtime.Dial reaches in this process.
const Scheme = "warrentest"

var (
	busesMu sync.Mutex
	buses   = map[string]*Bus{}
	lastID  int
)

func init() {
	transport.Register(Scheme, func(_ context.Context, addr string, _ amqp.Config) (transport.Connection, error) {
		u, err := url.Parse(addr)
		if err != nil {
			return nil, fmt.Errorf("in-process bus address %q: %w", addr, err)
		}
		busesMu.Lock()
		b, ok := buses[u.Host]
		busesMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("in-process bus %q: no such bus in this process (its test has ended, or the address was not made by warrentest)", u.Host)
		}
		conn, err := b.broker.Dial()
		if err != nil {
			return nil, err
		}
		return busConn{Conn: conn, b: b}, nil
	})
}

// Option adjusts a Bus.
type Option func(*options)

type options struct {
	version  string
	logger   *slog.Logger
	patience time.Duration
}

// WithBrokerVersion makes the bus announce a RabbitMQ version other than
// 3.13.7, which changes the queue arguments the runtime declares (for
// example "4.0.5": quorum queues with two priority levels and a default
// delivery limit).
func WithBrokerVersion(v string) Option { return func(o *options) { o.version = v } }

// WithLogger sends the runtime's log to l; by default it is discarded.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithPatience bounds how long [Bus.Idle] waits for the bus to settle,
// and [Bus.Start] for what it starts to read: virtual time under [Run]
// (default 24 hours), wall time under [New] (default 10 seconds).
func WithPatience(d time.Duration) Option { return func(o *options) { o.patience = d } }

// Bus is one in-process broker with a topology declared on it, and the
// record of what happened on it.
type Bus struct {
	t       testing.TB
	top     topology.Topology
	opts    options
	virtual bool
	broker  *membroker.Broker
	id      string
	ctx     context.Context
	cancel  context.CancelFunc

	mu      sync.Mutex
	conn    *runtime.Conn
	pub     *runtime.Publisher
	facts   factIndex
	offsets *offsetStore
	groups  groups
	calls   []Call
	running map[runKey]Call
	runners []*runner
	ready   readiness
}

type runKey struct {
	consumer string
	tag      uint64
	msgID    string
}

type runner struct {
	name string
	done chan struct{}
	err  error
}

// Runner is what [Bus.Start] runs: a consumer, an ordered consumer, a
// responder or an outbox relay.
type Runner interface {
	Run(ctx context.Context) error
}

// New returns a bus with top declared on it, in real time. It is torn down
// when the test ends: what it started is stopped, and a delivery still in
// flight fails the test.
func New(t testing.TB, top topology.Topology, opts ...Option) *Bus {
	t.Helper()
	b := newBus(t, top, false, opts)
	t.Cleanup(b.teardown)
	return b
}

// Run runs f in virtual time, with a bus that has top declared on it: the
// clock moves only when every goroutine of the test waits, so timers,
// delays and TTLs of any length pass at once. f must not start work that
// waits on anything outside the test process (a network database, say);
// use [New] for that. The bus is torn down when f returns.
func Run(t *testing.T, top topology.Topology, f func(t *testing.T, b *Bus), opts ...Option) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		b := newBus(t, top, true, opts)
		defer b.teardown()
		f(t, b)
	})
}

func newBus(t testing.TB, top topology.Topology, virtual bool, opts []Option) *Bus {
	t.Helper()
	o := options{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if virtual {
		o.patience = 24 * time.Hour
	} else {
		o.patience = 10 * time.Second
	}
	for _, opt := range opts {
		opt(&o)
	}
	b := &Bus{t: t, top: top, opts: o, virtual: virtual, running: map[runKey]Call{}, offsets: &offsetStore{offs: map[[2]string]int64{}}}
	b.groups.by = map[[2]string][]*member{}
	b.broker = membroker.New(membroker.Options{Version: o.version, Observer: (*observer)(b)})
	busesMu.Lock()
	lastID++
	b.id = "bus-" + strconv.Itoa(lastID)
	buses[b.id] = b
	busesMu.Unlock()
	b.ctx, b.cancel = context.WithCancel(context.Background())
	conn, err := runtime.Dial(b.ctx, runtime.Config{URLs: []string{b.URL()}, Logger: o.logger, Topology: &b.top, ConnectionName: t.Name(), StreamOffsets: b.StreamOffsets()})
	if err != nil {
		t.Fatalf("warrentest: connect to the in-process bus: %v", err)
	}
	b.conn = conn
	return b
}

// URL is the bus's address, for code under test that dials by itself:
// runtime.Dial reaches the bus with it from anywhere in this process.
func (b *Bus) URL() string { return Scheme + "://" + b.id + "/" }

// T is the test the bus belongs to.
func (b *Bus) T() testing.TB { return b.t }

// Context is cancelled when the test ends.
func (b *Bus) Context() context.Context { return b.ctx }

// Conn is a connection to the bus, with the topology declared; it is
// closed when the test ends.
func (b *Bus) Conn() *runtime.Conn { return b.conn }

// Topology is the topology declared on the bus.
func (b *Bus) Topology() topology.Topology { return b.top }

// DropConnections cuts every connection to the bus as a broker that goes
// away does: unacknowledged deliveries go back to their queues, marked
// redelivered, and the runtime reconnects.
func (b *Bus) DropConnections() { b.broker.DropConnections() }

// Start runs r until the test ends, and returns once r reads what it
// reads, so that a fact published after Start reaches it: a consumer or
// responder of the topology named name consumes its queues (an ordered
// consumer, its shard queues), a stream consumer has fixed where it reads
// its stream from and subscribed there (a start "next" or "last" is the
// stream's end when Start returns, not some moment after), and a consumer
// of a super stream has joined its group. A runner the topology does not
// name (an outbox relay) is only started. err is the error of r's
// constructor: if set, the test fails at once, naming name. If r stops
// before it reads everything (its queue does not exist, say), or does not
// within the patience ([WithPatience]), the test fails at once; if it
// stops later but before the test ends, the test fails with what it
// returned.
func (b *Bus) Start(name string, r Runner, err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatalf("warrentest: start %s: %v", name, err)
	}
	if r == nil {
		b.t.Fatalf("warrentest: start %s: nil runner", name)
	}
	rn := &runner{name: name, done: make(chan struct{})}
	whats := b.awaited(name)
	before := b.ready.snapshot(name, whats)
	b.mu.Lock()
	b.runners = append(b.runners, rn)
	b.mu.Unlock()
	go func() {
		defer close(rn.done)
		rn.err = r.Run(b.ctx)
	}()
	b.awaitReady(rn, whats, before)
}

// stopped reports the runners that have returned while the test still
// runs.
func (b *Bus) stopped() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, r := range b.runners {
		select {
		case <-r.done:
			if b.ctx.Err() == nil {
				out = append(out, fmt.Sprintf("%s stopped early: %v", r.name, r.err))
			}
		default:
		}
	}
	return out
}

func (b *Bus) teardown() {
	b.t.Helper()
	if b.virtual {
		synctest.Wait()
	}
	if busy := b.busy(busyInFlight); len(busy) > 0 && !b.t.Failed() {
		b.t.Errorf("warrentest: the test ended with deliveries in flight (call Idle before it ends):\n  %s", strings.Join(busy, "\n  "))
	}
	for _, s := range b.stopped() {
		b.t.Errorf("warrentest: %s", s)
	}
	b.cancel()
	b.mu.Lock()
	runners := b.runners
	b.mu.Unlock()
	// A consumer gives its running handlers its shutdown timeout (30s by
	// default) before it cancels them: no time at all in virtual time.
	grace := 45 * time.Second
	if b.virtual {
		grace = time.Hour
	}
	for _, r := range runners {
		select {
		case <-r.done:
		case <-time.After(grace):
			b.t.Errorf("warrentest: %s did not stop within %v of the end of the test", r.name, grace)
		}
	}
	b.mu.Lock()
	pub := b.pub
	b.mu.Unlock()
	if pub != nil {
		_ = pub.Close()
	}
	_ = b.conn.Close()
	b.broker.Close()
	busesMu.Lock()
	delete(buses, b.id)
	busesMu.Unlock()
}

// publisher returns the bus's publisher on the topology's events exchange.
func (b *Bus) publisher() *runtime.Publisher {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pub == nil {
		p, err := runtime.NewPublisher(b.conn, b.eventsExchange())
		if err != nil {
			b.t.Fatalf("warrentest: publisher: %v", err)
		}
		b.pub = p
	}
	return b.pub
}

// eventsExchange is the exchange consumers bind to.
func (b *Bus) eventsExchange() string {
	if len(b.top.Exchanges) > 0 {
		return b.top.Exchanges[0].Name
	}
	return topology.DefaultExchanges.Events
}
