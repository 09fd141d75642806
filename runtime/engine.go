package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// The engine is the one delivery loop that every kind of consumer runs on:
// plain consumers, ordered consumers and responders. It owns what they
// share — the session and its reconnects, one channel with its prefetch,
// the consume of each queue, the worker pool, shutdown, the pause for an
// outage, metrics and health — and leaves to the kind ([kind]) only what
// differs: which queues it reads, how a channel's deliveries become jobs
// for the workers ([source]), how a job is handled and settled, and how it
// is given back. A new kind (batches, streams) is a new kind and source,
// not a new loop.

// kind is what a consumer kind brings to the engine. J is the unit of work
// a worker takes: one delivery for the kinds so far.
type kind[J any] interface {
	// queues names the queues to consume on each channel, in the order of
	// the feeds that source receives.
	queues() []string
	// source arranges the deliveries of one channel (one feed per queue)
	// into jobs for the workers.
	source(r *channelRun, feeds []<-chan amqp.Delivery) source[J]
	// work handles a job and settles every delivery in it. It must not
	// return before each is acked, copied and acked, or given back, unless
	// the channel is gone (the broker then delivers them again).
	work(r *channelRun, j J)
	// giveBack returns a job's deliveries to their queue unsettled.
	giveBack(j J, why string)
	// traits says how the kind pauses and stops.
	traits() traits
}

// traits are the engine's switches for a kind.
type traits struct {
	// pauses: an outage of a dependency pauses consuming (see
	// [OutagePolicy]); the kind is then a [pauser].
	pauses bool
	// stopsInPlace: at shutdown the kind keeps its consumers registered,
	// lets running work finish and then closes the channel, which returns
	// every unacked delivery in queue order; the others cancel their
	// consumers and give back at once what no worker started. Ordered
	// consumers stop in place: cancelling would hand their single-active
	// shards to another instance while this one still works on an earlier
	// fact of a key.
	stopsInPlace bool
	// queueNoun names the kind's queues in errors ("work queue").
	queueNoun string
	// acksTogether: the kind's channel has an [acker], which acks
	// deliveries several at a time (channelRun.acks).
	acksTogether bool
	// finishesOnLoss: when the channel is lost, the work in hand is let
	// finish (up to the shutdown timeout) instead of being cancelled. A
	// stream's position is the offset the consumer stores, not the
	// channel's acks: a fact whose handling ends after the channel is gone
	// still counts, where a cancelled one would be read again.
	finishesOnLoss bool
}

// pauser is a kind that pauses during an outage.
type pauser[J any] interface {
	// hold keeps a job that arrived after the pause began, without
	// handling it and without spending an attempt.
	hold(r *channelRun, j J)
	// probe handles one delivery taken with basic.get while paused, and
	// returns the handling's error: one not [Unavailable] ends the pause.
	probe(r *channelRun, d amqp.Delivery) error
}

// consumeArger is a kind whose consume of a queue takes arguments of its
// own (a stream consumer's start position), computed at each consume.
type consumeArger interface {
	consumeArgs(queue string, args amqp.Table) (amqp.Table, error)
}

// ownChanneler is a kind that consumes each of its queues on a channel of
// its own, beside the run's channel: it can then give one queue back to
// the broker (closing that channel returns the queue's unacked deliveries
// in order) and consume it again, without touching the others. An ordered
// consumer hands shards to a peer so.
type ownChanneler interface{ ownChannels() bool }

// source hands one channel's work to the engine's workers.
type source[J any] interface {
	// next returns the next job, or false once the channel's feeds have
	// ended (or, for a kind that stops in place, once stop is closed).
	next(stop <-chan struct{}) (J, bool)
	// done tells the source that a worker settled j.
	done(j J)
	// lost receives the queue whose consumer the broker cancelled while
	// the channel's other consumers go on; nil for a source of one feed,
	// whose end ends every worker.
	lost() <-chan string
}

// core is the state every kind of consumer keeps, whatever it consumes.
type core struct {
	conn     *Conn
	name     string
	noun     string // "consumer" or "responder": how logs and errors name it
	opts     consumerOptions
	log      *slog.Logger
	metrics  Metrics
	counters *counters
	lane     lane // confirmed copies: retries, poison, replies
	outage   *outage
	running  atomic.Bool

	// consumeArgs are the arguments of every basic.consume: the versions
	// a consumer reads ([ArgReads]), which the broker shows per consumer.
	consumeArgs amqp.Table

	mu   sync.Mutex
	last lastError // the last channel loss, for Health
}

func newCore(conn *Conn, name, noun string, opts consumerOptions) core {
	return core{
		conn: conn, name: name, noun: noun, opts: opts,
		log:      conn.log.With(noun, name),
		metrics:  conn.cfg.Metrics,
		counters: conn.stats.of(name),
		lane:     lane{conn: conn},
		outage:   newOutage(opts.outage),
	}
}

// count records one event of a delivery, in the Conn's counters and the
// configured [Metrics].
func (c *core) count(e Event, routingKey string) {
	c.counters[e].Add(1)
	c.metrics.Count(c.name, e, routingKey)
}

// health reports the connection, whether Run runs and whether the kind is
// paused, with the latest of its outage and channel errors.
func (c *core) health() Health {
	h := c.conn.Health()
	h.Running = c.running.Load()
	paused, last := c.outage.state()
	h.Paused = paused
	c.mu.Lock()
	if c.last.at.After(last.at) {
		last = c.last
	}
	c.mu.Unlock()
	h.LastError, h.LastErrorAt = c.conn.redact(last.err), last.at
	return h
}

// engine runs a kind on its core.
type engine[J any] struct {
	*core
	kind kind[J]
}

// healthyAfter is how long a channel must have run for the next loss to
// count as a new incident: the reconnect backoff starts again from its
// shortest wait instead of growing from the last one.
const healthyAfter = 10 * time.Second

// reconnectRound returns the backoff round to wait after a channel that
// ran for ran ended, given the round the previous loss waited: a channel
// that was healthy for a while starts the ladder again.
func reconnectRound(round int, ran time.Duration) int {
	if ran > healthyAfter {
		return 0
	}
	return round
}

// run consumes until ctx is cancelled, resuming across connection and
// channel losses. It returns nil after a clean shutdown, and an error if a
// queue does not exist, the Conn was closed, or work outlived the shutdown
// timeout.
func (e *engine[J]) run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%s %q: Run is already running", e.noun, e.name)
	}
	defer e.running.Store(false)
	defer e.lane.release()
	round := 0
	for {
		s, err := e.conn.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s %q: %w", e.noun, e.name, err)
		}
		started := time.Now()
		end, err := e.channel(ctx, s)
		if end {
			return err
		}
		e.log.Warn(e.noun+" lost its channel; resuming", "err", e.conn.redact(err))
		e.mu.Lock()
		e.last.set(err)
		e.mu.Unlock()
		round = reconnectRound(round, time.Since(started))
		if !sleepCtx(ctx.Done(), backoff(round, e.conn.cfg.ReconnectMin, e.conn.cfg.ReconnectMax)) {
			return nil
		}
		round++
	}
}

// channelRun is one channel of a consumer and what its work runs under.
type channelRun struct {
	s      *session
	ch     transport.Channel
	closed chan *amqp.Error
	// hctx is the handlers' ctx. Handlers outlive Run's ctx: cancelling
	// Run asks for a graceful stop, not for the work in hand to be
	// abandoned; cancelHandlers abandons it.
	hctx           context.Context
	cancelHandlers context.CancelFunc
	// stop closes when the channel's work should end: at shutdown of a
	// kind that stops in place, or when the channel is lost.
	stop chan struct{}
	halt func()

	// acks sends the acks of a kind that acks together (traits), nil for
	// the others; it sees every delivery tag of the channel end.
	acks *acker

	// For a kind with own channels: each queue's channel, and how to
	// consume a queue again on a new one.
	ownMu      sync.Mutex
	own        map[string]transport.Channel
	ownClosed  bool // closeAll ran: a channel opened now would outlive the run
	consumeOwn func(q string) (<-chan amqp.Delivery, error)

	// reread is why the run closed its own channel to read a stream again
	// (closeToReread); nil until then.
	reread atomic.Pointer[error]
}

// closeToReread closes the run's channel, once, for why: the engine
// resumes on a new channel, and a stream consumer reads its stream again
// from the stored offset. Closed from another goroutine: a worker calls
// it, and the close waits for the broker.
func (r *channelRun) closeToReread(why error) {
	if r.reread.CompareAndSwap(nil, &why) {
		go func() { _ = r.ch.Close() }()
	}
}

// closeOwn closes queue q's own channel, if it has one: the broker returns
// its unacked deliveries to q in order, and the next waiting consumer of a
// single-active-consumer queue becomes active.
func (r *channelRun) closeOwn(q string) {
	r.ownMu.Lock()
	ch := r.own[q]
	delete(r.own, q)
	r.ownMu.Unlock()
	if ch != nil {
		_ = ch.Close()
	}
}

// closeAll closes every own channel, then the run's channel.
func (r *channelRun) closeAll() {
	r.ownMu.Lock()
	r.ownClosed = true
	qs := make([]string, 0, len(r.own))
	for q := range r.own {
		qs = append(qs, q)
	}
	r.ownMu.Unlock()
	for _, q := range qs {
		r.closeOwn(q)
	}
	_ = r.ch.Close()
}

// channel runs one channel. end reports that Run should return err (a
// shutdown or a fatal error) rather than resume.
func (e *engine[J]) channel(ctx context.Context, s *session) (end bool, err error) {
	ch, err := s.conn.Channel()
	if err != nil {
		return false, fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(e.opts.prefetch, 0, false); err != nil {
		return false, fmt.Errorf("set prefetch: %w", err)
	}
	r := &channelRun{s: s, ch: ch, closed: ch.NotifyClose(make(chan *amqp.Error, 1)), stop: make(chan struct{})}
	r.halt = sync.OnceFunc(func() { close(r.stop) })
	defer r.closeAll() // own channels before ch: their deliveries return in order
	if e.kind.traits().acksTogether {
		r.acks = newAcker(e.core, e.opts.prefetch)
		if _, ok := s.conn.(transport.AcksAtOnce); ok {
			r.acks.every = 1
		}
		defer r.acks.stop() // before the channels close
	}
	r.hctx, r.cancelHandlers = context.WithCancel(context.WithoutCancel(ctx))
	defer r.cancelHandlers()
	for {
		// A pause outlives a lost channel: the new one probes first.
		if paused, _ := e.outage.state(); paused && e.kind.traits().pauses {
			if end, err := e.probe(ctx, r); end || err != nil {
				return end, err
			}
		}
		paused, end, err := e.serve(ctx, r)
		if !paused {
			return end, err
		}
	}
}

// consumeAll starts a consumer on each of the kind's queues.
func (e *engine[J]) consumeAll(r *channelRun) (feeds []<-chan amqp.Delivery, tags []string, end bool, err error) {
	for _, q := range e.kind.queues() {
		tag := consumerTag(e.name)
		args := e.consumeArgs
		if a, ok := e.kind.(consumeArger); ok {
			if args, err = a.consumeArgs(q, args); err != nil {
				// A missing plugin does not come back by waiting.
				var pe *PluginError
				return nil, nil, errors.As(err, &pe), fmt.Errorf("consume %q: %w", q, err)
			}
		}
		var feed <-chan amqp.Delivery
		if oc, ok := e.kind.(ownChanneler); ok && oc.ownChannels() {
			feed, err = e.consumeOwn(r, q, tag, args)
		} else {
			feed, err = r.ch.Consume(q, tag, false, false, false, false, args)
		}
		if err != nil {
			var ae *amqp.Error
			if errors.As(err, &ae) && ae.Code == amqp.NotFound {
				return nil, nil, true, fmt.Errorf("%s %q: %s %q does not exist: declare the topology (Config.Topology)", e.noun, e.name, e.kind.traits().queueNoun, q)
			}
			return nil, nil, false, fmt.Errorf("consume %q: %w", q, err)
		}
		feeds, tags = append(feeds, feed), append(tags, tag)
	}
	e.log.Debug("consuming", "queues", e.kind.queues(), "url", r.s.url)
	r.consumeOwn = func(q string) (<-chan amqp.Delivery, error) {
		return e.consumeOwn(r, q, consumerTag(e.name), e.consumeArgs)
	}
	return feeds, tags, false, nil
}

// consumeOwn consumes q on a new channel of r's connection, with the
// kind's prefetch, and keeps the channel as q's own.
func (e *engine[J]) consumeOwn(r *channelRun, q, tag string, args amqp.Table) (<-chan amqp.Delivery, error) {
	ch, err := r.s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Qos(e.opts.prefetch, 0, false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("set prefetch: %w", err)
	}
	feed, err := ch.Consume(q, tag, false, false, false, false, args)
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	if r.ownClosed {
		_ = ch.Close()
		return nil, errors.New("the channel's run is over")
	}
	if r.own == nil {
		r.own = map[string]transport.Channel{}
	}
	r.own[q] = ch
	return feed, nil
}

// serve takes deliveries with the worker pool until the channel ends,
// Run's ctx is cancelled or an outage pauses the kind (paused).
func (e *engine[J]) serve(ctx context.Context, r *channelRun) (paused, end bool, err error) {
	feeds, tags, end, err := e.consumeAll(r)
	if err != nil {
		return false, end, err
	}
	src := e.kind.source(r, feeds)
	var stopping, pausing atomic.Bool
	p, _ := e.kind.(pauser[J])
	var wg sync.WaitGroup
	for range e.opts.concurrency {
		wg.Go(func() {
			for {
				j, ok := src.next(r.stop)
				if !ok {
					return
				}
				switch {
				case stopping.Load():
					e.kind.giveBack(j, "shutting down")
				case pausing.Load() && p != nil:
					// Sent before the pause took effect: kept for later
					// without calling the handler.
					p.hold(r, j)
				default:
					e.kind.work(r, j)
				}
				src.done(j)
			}
		})
	}
	idle := make(chan struct{})
	go func() { wg.Wait(); close(idle) }()
	var pause <-chan struct{}
	if e.kind.traits().pauses && p != nil {
		pause = e.outage.pause
	}

	select {
	case <-idle:
		r.halt()
		if e.conn.ctx.Err() != nil {
			// Conn.Close ended the deliveries: nothing to resume, and
			// no queue was deleted.
			return false, true, fmt.Errorf("%s %q: connection: %w", e.noun, e.name, ErrClosed)
		}
		return false, false, fmt.Errorf("the broker cancelled the %s (was the queue deleted?)", e.noun)
	case q := <-src.lost():
		r.halt()
		select {
		case ce := <-r.closed: // the channel ended, and every consumer with it
			end, err := e.channelClosed(ctx, r, idle, ce)
			return false, end, err
		default:
		}
		// A queue without its consumer would wait unread: start over on a
		// new channel (Run resumes), the unacked deliveries returning. The
		// work in hand is waited for as when the channel closes.
		if end, err := e.waitIdle(ctx, r, idle); end {
			return false, end, err
		}
		if why := r.reread.Load(); why != nil {
			// The feeds end before the close is told, when the run closed
			// its channel itself.
			return false, false, *why
		}
		return false, false, fmt.Errorf("the broker cancelled the consumer of queue %q (was it deleted?)", q)
	case ce := <-r.closed:
		r.halt()
		end, err := e.channelClosed(ctx, r, idle, ce)
		return false, end, err
	case <-pause:
		pausing.Store(true)
		e.cancelAll(r, tags)
		select {
		case <-idle:
			return true, false, nil
		case ce := <-r.closed:
			r.halt()
			end, err := e.channelClosed(ctx, r, idle, ce)
			return false, end, err
		}
	case <-ctx.Done():
		if e.kind.traits().stopsInPlace {
			return false, true, e.stopInPlace(r, idle)
		}
		stopping.Store(true)
		// Deliveries not yet started go back at once rather than wait
		// behind busy handlers; idle workers give back what they pick up.
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for {
				j, ok := src.next(nil)
				if !ok {
					return
				}
				e.kind.giveBack(j, "shutting down")
				src.done(j)
			}
		}()
		return false, true, e.shutdown(r, tags, idle, drained)
	}
}

// cancelAll asks the broker to stop sending on every consumer of r.
func (e *engine[J]) cancelAll(r *channelRun, tags []string) {
	for _, tag := range tags {
		if err := r.ch.Cancel(tag, false); err != nil {
			e.log.Debug("cancel consumer", "err", e.conn.redact(err))
		}
	}
}

// channelClosed waits for the work in hand after the broker closed the
// channel; the broker delivers again what it holds.
func (e *engine[J]) channelClosed(ctx context.Context, r *channelRun, idle <-chan struct{}, ce *amqp.Error) (end bool, err error) {
	if end, err := e.waitIdle(ctx, r, idle); end {
		return end, err
	}
	if ce == nil {
		if why := r.reread.Load(); why != nil {
			return false, *why
		}
		return false, errors.New("channel closed")
	}
	return false, fmt.Errorf("channel closed: %w", ce)
}

// waitIdle cancels the handlers of a channel that is gone (their acks
// cannot land) and waits for the workers, bounded by the shutdown timeout
// once Run's ctx is cancelled. A kind that finishes on loss lets its
// handlers run first, up to the shutdown timeout.
func (e *engine[J]) waitIdle(ctx context.Context, r *channelRun, idle <-chan struct{}) (end bool, err error) {
	if e.kind.traits().finishesOnLoss {
		t := time.NewTimer(e.opts.shutdownTimeout)
		select {
		case <-idle:
			t.Stop()
			return false, nil
		case <-t.C:
		}
	}
	r.cancelHandlers()
	select {
	case <-idle:
	case <-ctx.Done():
		select {
		case <-idle:
		case <-time.After(e.opts.shutdownTimeout):
			return true, fmt.Errorf("%s %q: handlers still running %s after the channel closed and Run was cancelled", e.noun, e.name, e.opts.shutdownTimeout)
		}
	}
	return false, nil
}

// shutdown stops a kind that gives back: the broker stops sending, and
// after its cancel-ok each feed closes once what the broker already sent
// has drained back to the queue. Running work gets the shutdown timeout.
func (e *engine[J]) shutdown(r *channelRun, tags []string, idle, drained <-chan struct{}) error {
	e.cancelAll(r, tags)
	t := time.NewTimer(e.opts.shutdownTimeout)
	defer t.Stop()
	select {
	case <-idle:
		<-drained
		e.log.Info(e.noun + " stopped")
		return nil
	case <-t.C:
		r.cancelHandlers()
		_ = r.ch.Close() // their unacked messages return to the queue
		return e.outlived()
	}
}

// stopInPlace stops a kind that stops in place: the workers take nothing
// more, running work gets the shutdown timeout, and closing the channel
// (channel's defer) returns every unacked delivery to its queue in order.
func (e *engine[J]) stopInPlace(r *channelRun, idle <-chan struct{}) error {
	r.halt()
	t := time.NewTimer(e.opts.shutdownTimeout)
	defer t.Stop()
	select {
	case <-idle:
	case <-r.closed:
	case <-t.C:
		r.cancelHandlers()
		return e.outlived()
	}
	e.log.Info(e.noun + " stopped")
	return nil
}

func (e *engine[J]) outlived() error {
	return fmt.Errorf("%s %q: handlers still running after the %s shutdown timeout were cancelled; their messages return to the queue",
		e.noun, e.name, e.opts.shutdownTimeout)
}

// feedSource is the source of a kind that reads one queue and handles each
// delivery on its own: every worker takes the next delivery of the feed.
type feedSource struct{ feed <-chan amqp.Delivery }

func (s feedSource) next(<-chan struct{}) (amqp.Delivery, bool) {
	d, ok := <-s.feed
	return d, ok
}

func (feedSource) done(amqp.Delivery)  {}
func (feedSource) lost() <-chan string { return nil }
