package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Consumer reads one consumer's work queue and settles every delivery by
// the wire contract: success acks; a transient failure sends a copy to the
// next delay tier and a permanent one (or the last attempt) a copy to the
// poison queue, each confirmed by the broker before the original is acked.
// Nothing is acked that is not done or safely copied, so a crash at any
// point leaves the message in a queue.
type Consumer struct {
	conn     *Conn
	spec     topology.Consumer
	routes   map[string]Route
	opts     consumerOptions
	log      *slog.Logger
	metrics  Metrics
	counters *counters
	lane     lane
	chain    HandlerFunc // the middleware, the guard and the handler call, built once
	outage   *outage
	running  atomic.Bool
	// newerSeen remembers the (routing key, version) pairs newer than the
	// consumer's that were logged already (versionKey -> true).
	newerSeen sync.Map

	mu   sync.Mutex
	last lastError // the last channel loss, for Health

	ordered *orderedState // ordered consumers only: sequences and parked keys
}

// ConsumerOption configures a [Consumer].
type ConsumerOption func(*consumerOptions)

type consumerOptions struct {
	guard           Guard
	middleware      []Middleware
	shutdownTimeout time.Duration
	prefetch        int
	concurrency     int
	maxBodySize     int
	outage          OutagePolicy
}

// HandlerFunc handles one delivery whose envelope, route and payload have
// already been checked; the fact itself is decoded by the [Route].
type HandlerFunc func(ctx context.Context, d Delivery) error

// Middleware wraps the handling of each delivery, for tracing, logging or
// timeouts. It may return an error marked with [Permanent].
type Middleware func(next HandlerFunc) HandlerFunc

// WithMiddleware adds middleware around every handler call. The first
// listed runs outermost. Order, outside in: panic recovery, these
// middleware, the guard ([WithGuard]), panic recovery, the handler.
func WithMiddleware(m ...Middleware) ConsumerOption {
	return func(o *consumerOptions) { o.middleware = append(o.middleware, m...) }
}

// WithShutdownTimeout bounds how long Run waits, once its ctx is
// cancelled, for running handlers to finish (default 30s). Handlers still
// running then see their ctx cancelled and their messages return to the
// queue unacked, to be delivered again: shutdown never loses a message.
func WithShutdownTimeout(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.shutdownTimeout = d }
}

// WithPrefetch overrides the topology's prefetch: how many unacked
// deliveries the broker sends ahead.
func WithPrefetch(n int) ConsumerOption {
	return func(o *consumerOptions) { o.prefetch = n }
}

// WithConcurrency overrides the topology's concurrency: how many handlers
// run at once.
func WithConcurrency(n int) ConsumerOption {
	return func(o *consumerOptions) { o.concurrency = n }
}

// NewConsumer returns a consumer of c's work queue that dispatches each fact
// by routing key to one of routes. Facts with no route go to poison. Run
// starts it.
func NewConsumer(conn *Conn, c topology.Consumer, routes []Route, opts ...ConsumerOption) (*Consumer, error) {
	o := consumerOptions{shutdownTimeout: 30 * time.Second, prefetch: c.Prefetch, concurrency: c.Concurrency, maxBodySize: DefaultMaxBodySize}
	for _, opt := range opts {
		opt(&o)
	}
	o.concurrency = max(o.concurrency, 1)
	o.prefetch = max(o.prefetch, o.concurrency)
	var errs []error
	if conn == nil {
		errs = append(errs, errors.New("nil Conn"))
	}
	if c.Name == "" || c.Queue == "" && !c.Ordered() || c.PoisonQueue == "" || c.DeadExchange == "" {
		errs = append(errs, errors.New("incomplete topology.Consumer: use one from topology.Build"))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts %d: expected at least 1", c.MaxAttempts))
	} else if c.MaxAttempts > 1 && !c.Ordered() && (len(c.Tiers) == 0 || c.RetryExchange == "") {
		errs = append(errs, fmt.Errorf("MaxAttempts %d needs retry tiers and a retry exchange", c.MaxAttempts))
	}
	if len(routes) == 0 {
		errs = append(errs, errors.New("no routes"))
	}
	if o.maxBodySize < 1 || o.maxBodySize > MaxBodySizeCeiling {
		errs = append(errs, fmt.Errorf("WithMaxBodySize(%d): expected 1 to %d bytes (RabbitMQ's default max_message_size)", o.maxBodySize, MaxBodySizeCeiling))
	}
	byKey := map[string]Route{}
	for _, r := range routes {
		switch key := r.fact.RoutingKey; {
		case r.decode == nil || key == "":
			errs = append(errs, errors.New("route without a fact: build routes with Handle"))
		case byKey[key].decode != nil:
			errs = append(errs, fmt.Errorf("two routes for %q", key))
		default:
			byKey[key] = r
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new consumer %q: %w", c.Name, err)
	}
	var ordered *orderedState
	if c.Ordered() {
		ordered = newOrderedState()
	}
	return &Consumer{
		conn: conn, spec: c, routes: byKey, opts: o, ordered: ordered,
		log:      conn.log.With("consumer", c.Name),
		metrics:  conn.cfg.Metrics,
		counters: conn.stats.of(c.Name),
		lane:     lane{conn: conn},
		chain:    buildChain(c.Name, o.guard, o.middleware),
		outage:   newOutage(o.outage),
	}, nil
}

// Run consumes until ctx is cancelled, then stops taking deliveries, gives
// back those not yet started, waits for running handlers (bounded by the
// shutdown timeout) and returns. Across connection and channel losses it
// resumes by itself. It returns nil after a clean shutdown, and an error if
// the work queue does not exist, the Conn was closed, or handlers outlived
// the shutdown timeout (their messages return to the queue).
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return fmt.Errorf("consumer %q: Run is already running", c.spec.Name)
	}
	defer c.running.Store(false)
	defer c.lane.release()
	round := 0
	for {
		s, err := c.conn.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("consumer %q: %w", c.spec.Name, err)
		}
		started := time.Now()
		end, err := c.consume(ctx, s)
		if end {
			return err
		}
		c.log.Warn("consumer lost its channel; resuming", "err", c.conn.redact(err))
		c.mu.Lock()
		c.last.set(err)
		c.mu.Unlock()
		if time.Since(started) > 10*time.Second {
			round = 0
		}
		if !sleepCtx(ctx.Done(), backoff(round, c.conn.cfg.ReconnectMin, c.conn.cfg.ReconnectMax)) {
			return nil
		}
		round++
	}
}

// consume runs one channel. end reports that Run should return err (a
// shutdown or a fatal error) rather than resume.
func (c *Consumer) consume(ctx context.Context, s *session) (end bool, err error) {
	ch, err := s.conn.Channel()
	if err != nil {
		return false, fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(c.opts.prefetch, 0, false); err != nil {
		return false, fmt.Errorf("set prefetch: %w", err)
	}
	r := &channelRun{s: s, ch: ch, closed: ch.NotifyClose(make(chan *amqp.Error, 1))}
	// Handlers outlive Run's ctx: cancelling Run asks for a graceful stop,
	// not for the work in hand to be abandoned.
	r.hctx, r.cancelHandlers = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelHandlers()
	if c.spec.Ordered() {
		return c.streamOrdered(ctx, r)
	}
	for {
		// A pause outlives a lost channel: the new one probes first.
		if paused, _ := c.outage.state(); paused {
			if end, err := c.probe(ctx, r); end || err != nil {
				return end, err
			}
		}
		paused, end, err := c.stream(ctx, r)
		if !paused {
			return end, err
		}
	}
}

// channelRun is one channel of a consumer and what its handlers run under.
type channelRun struct {
	s              *session
	ch             *amqp.Channel
	closed         chan *amqp.Error
	hctx           context.Context
	cancelHandlers context.CancelFunc
}

// stream takes deliveries until the channel ends, Run's ctx is cancelled
// or an outage pauses the consumer (paused).
func (c *Consumer) stream(ctx context.Context, r *channelRun) (paused, end bool, err error) {
	tag := consumerTag(c.spec.Name)
	deliveries, err := r.ch.Consume(c.spec.Queue, tag, false, false, false, false, nil)
	if err != nil {
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.NotFound {
			return false, true, fmt.Errorf("consumer %q: work queue %q does not exist: declare the topology (Config.Topology)", c.spec.Name, c.spec.Queue)
		}
		return false, false, fmt.Errorf("consume %q: %w", c.spec.Queue, err)
	}
	c.log.Debug("consuming", "queue", c.spec.Queue, "url", r.s.url)

	var stopping, pausing atomic.Bool
	var wg sync.WaitGroup
	for range c.opts.concurrency {
		wg.Go(func() {
			for d := range deliveries {
				switch {
				case stopping.Load():
					c.giveBack(d, "shutting down")
				case pausing.Load():
					// Sent before the pause took effect: kept for later
					// without calling the handler.
					c.hold(r.hctx, inspect(r.s, d), errPaused)
				default:
					c.process(r.hctx, r.s, d)
				}
			}
		})
	}
	idle := make(chan struct{})
	go func() { wg.Wait(); close(idle) }()

	select {
	case <-idle:
		return false, false, errors.New("the broker cancelled the consumer (was the queue deleted?)")
	case e := <-r.closed:
		end, err := c.channelClosed(ctx, r, idle, e)
		return false, end, err
	case <-c.outage.pause:
		pausing.Store(true)
		if err := r.ch.Cancel(tag, false); err != nil {
			c.log.Debug("cancel consumer", "err", c.conn.redact(err))
		}
		select {
		case <-idle:
			return true, false, nil
		case e := <-r.closed:
			end, err := c.channelClosed(ctx, r, idle, e)
			return false, end, err
		}
	case <-ctx.Done():
		stopping.Store(true)
		// Deliveries not yet started go back at once rather than wait
		// behind busy handlers; idle workers give back what they pick up.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for d := range deliveries {
				c.giveBack(d, "shutting down")
			}
		}()
		return false, true, c.shutdown(r.ch, tag, idle, drained, r.cancelHandlers)
	}
}

// channelClosed waits for the handlers after the broker closed the
// channel; the broker redelivers what they hold.
func (c *Consumer) channelClosed(ctx context.Context, r *channelRun, idle <-chan struct{}, e *amqp.Error) (end bool, err error) {
	r.cancelHandlers()
	select {
	case <-idle:
	case <-ctx.Done():
		select {
		case <-idle:
		case <-time.After(c.opts.shutdownTimeout):
			return true, fmt.Errorf("consumer %q: handlers still running %s after the channel closed and Run was cancelled", c.spec.Name, c.opts.shutdownTimeout)
		}
	}
	if e == nil {
		return false, errors.New("channel closed")
	}
	return false, fmt.Errorf("channel closed: %w", e)
}

func (c *Consumer) shutdown(ch *amqp.Channel, tag string, idle, drained <-chan struct{}, cancelHandlers context.CancelFunc) error {
	// The broker stops sending; after its cancel-ok the deliveries channel
	// closes once what the broker already sent has drained.
	if err := ch.Cancel(tag, false); err != nil {
		c.log.Debug("cancel consumer", "err", err)
	}
	t := time.NewTimer(c.opts.shutdownTimeout)
	defer t.Stop()
	select {
	case <-idle:
		<-drained
		c.log.Info("consumer stopped")
		return nil
	case <-t.C:
		cancelHandlers()
		_ = ch.Close() // their unacked messages return to the queue
		return fmt.Errorf("consumer %q: handlers still running after the %s shutdown timeout were cancelled; their messages return to the queue",
			c.spec.Name, c.opts.shutdownTimeout)
	}
}

func consumerTag(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "." + hex.EncodeToString(b[:])
}
