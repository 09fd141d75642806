// Package poison reads and replays a consumer's poison lane: the messages
// that the runtime gave up on (attempts exhausted, a permanent error) or
// that the broker dead-lettered itself (over the delivery limit), waiting in
// the queue <consumer>.poison for a person.
//
// [List] shows them without taking them out. [Replay] moves them back to
// the consumer's work queue once the cause is fixed: through the default
// exchange with the work queue's name as routing key, so that the consumer
// that failed gets them again and no other consumer bound to the same
// routing key sees them a second time. Each copy has its attempt count
// reset and records the replay (x-replayed-at, x-replay-count) and the
// failure it had (x-last-failure, x-last-failed-at); the broker confirms
// the copy before the poison message is acked. A crash between the two
// leaves the message in both queues, never in neither: at least once.
//
// Both work over a [Broker], which *runtime.Conn is: a service uses the
// connection it already has, and warren replay dials the same way. They
// open their own channels and close them before returning. They never see
// a URL, so their errors hold none.
//
// # Reading without removing
//
// AMQP has no "peek". Every function here takes messages with manual
// acknowledgement (through a subscription whose prefetch is the number of
// messages ready at the start, so the broker pushes them without a round
// trip each; one basic.get at a time for a replay or discard of the first
// N messages, and should the subscription go quiet), and holds every message it does not remove unacknowledged until
// it returns; closing the channel then hands all of them back to the
// queue. Consequences:
//
//   - A scan covers the messages that were in the queue when it began.
//     Messages that arrive later, including a replayed message that fails
//     again, wait for the next run; a replay never loops on its own output.
//   - While a scan runs, the messages it holds are invisible to other
//     readers of the queue, so scans of one queue take turns: a second
//     one (another replay, a listing in another terminal, warren console)
//     waits until the first has handed everything back, up to two
//     minutes, and then fails with [ErrBusy] rather than read a queue
//     that looks empty or short. Across processes the turn is the
//     exclusive queue [ReadingQueue] on the broker, declared for the
//     scan's time; a user the broker does not let declare it takes turns
//     with its own process's scans alone.
//   - Returned messages are marked redelivered, and quorum queues count the
//     return in the x-delivery-count header. Poison queues have no delivery
//     limit, so nothing is dead-lettered because of it.
//   - Order: a classic queue puts returned messages back in their places.
//     A quorum queue (RabbitMQ 3.10) puts them behind the messages the scan
//     did not reach, so a scan that handed back part of the queue would
//     move that part to the end. Every scan therefore reads to the end of
//     what was there when it began, also one that stopped at its limit or
//     found the message it looked for (it passes the rest over unread),
//     and hands the whole queue back at once, in its order: a listing or
//     a dry run with a limit lists the same messages each time, and the
//     replay or discard with the same selection moves those. (A replay or
//     discard of the first N messages with no other condition takes them
//     one at a time and holds none, so it reads no further.) x-failed-at
//     keeps the true order of failures.
package poison

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Broker opens channels on a live connection. *runtime.Conn satisfies it;
// OpenChannel waits for a reconnect up to ctx's deadline.
type Broker interface {
	OpenChannel(ctx context.Context) (*amqp.Channel, error)
}

// Filter selects messages of a poison queue. Zero fields select everything.
type Filter struct {
	Limit      int    // at most this many messages; 0 means no limit
	ID         string // only the message with this id
	RoutingKey string // only messages of this routing key (as first published; exact, not a pattern)
	// IDs selects only the messages with one of these ids, for a person
	// who picked several; nil selects every id.
	IDs []string
	// Group selects only the messages whose cause has this id (see
	// [Groups] and [Cause.ID]).
	Group string
}

func (f Filter) match(m Message) bool {
	return (f.ID == "" || m.ID == f.ID) && (f.RoutingKey == "" || m.RoutingKey == f.RoutingKey) &&
		(f.IDs == nil || slices.Contains(f.IDs, m.ID)) && (f.Group == "" || CauseOf(m).ID() == f.Group)
}

func (f Filter) full(n int) bool { return f.Limit > 0 && n >= f.Limit }

// moving is the window of a scan for f that removes what it takes: none
// when f selects the first f.Limit messages, whatever they are (each one
// taken is removed, so the scan holds none and stops at its limit), else
// the whole queue. A window of n messages would be refilled by the broker
// as each one is acked, with messages beyond the n that the scan then
// hands back, and a quorum queue puts those behind the ones the scan
// never reached.
func (f Filter) moving() int {
	if f.Limit > 0 && f.ID == "" && f.RoutingKey == "" && f.IDs == nil && f.Group == "" {
		return noWindow
	}
	return wholeQueue
}

// List returns the messages of c's poison queue that f selects, in queue
// order, and leaves every one of them in the queue (see the package
// comment for what reading does to them).
func List(ctx context.Context, conn Broker, c topology.Consumer, f Filter) ([]Message, error) {
	return list(ctx, conn, c, c.PoisonQueue, f)
}

func list(ctx context.Context, conn Broker, c topology.Consumer, queue string, f Filter) ([]Message, error) {
	var out []Message
	err := each(ctx, conn, c, queue, f, func(m Message) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each calls fn with each message of the queue from stands for in c that
// f selects, in queue order, reading as [List] does, and stops at fn's
// first error, which it returns. It keeps no message once fn returned:
// use it for a queue too large to hold in memory.
func Each(ctx context.Context, conn Broker, c topology.Consumer, from Source, f Filter, fn func(Message) error) error {
	return each(ctx, conn, c, from.Queue(c), f, fn)
}

func each(ctx context.Context, conn Broker, c topology.Consumer, queue string, f Filter, fn func(Message) error) error {
	if err := walk(ctx, conn, c, queue, f, fn); err != nil {
		return fmt.Errorf("list %s: %w", queue, err)
	}
	return nil
}

// walk is each with errors that do not name the queue. It reads the whole
// queue even when f has a limit, so that it hands the whole queue back in
// its order (see [scan.close]).
func walk(ctx context.Context, conn Broker, c topology.Consumer, queue string, f Filter, fn func(Message) error) error {
	s, err := openScan(ctx, conn, queue, wholeQueue)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	for n := 0; !f.full(n); {
		d, ok, err := s.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if m := read(d, c); f.match(m) {
			n++
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// Replay moves the messages of c's poison queue that f selects back to c's
// work queue, and returns them as they were in the poison queue. Each is
// republished through the default exchange to c.Queue alone, with its
// attempt count reset, and acked in the poison queue only after the broker
// confirmed the copy. Messages f does not select stay where they are.
//
// On error the messages replayed so far are returned with it; the one being
// replayed when it happened is either still in the poison queue, or (if
// only its removal failed) in both queues.
func Replay(ctx context.Context, conn Broker, c topology.Consumer, f Filter) ([]Message, error) {
	return ReplayWith(ctx, conn, c, f, ReplayOptions{})
}

// move sends a copy of each message of the scan that f selects to where
// target says (an exchange and a routing key; "" and a queue name for one
// queue), waits for the broker's confirm, then (when then is not nil) runs
// then on the message, then removes it from the scan's queue.
func move(ctx context.Context, s *scan, pub *publisher, c topology.Consumer, f Filter,
	target func(Message) (exchange, key string, err error), copyOf func(amqp.Delivery, Message) amqp.Publishing,
	then func(amqp.Delivery, Message) error) ([]Message, error) {
	var done []Message
	for !f.full(len(done)) {
		d, ok, err := s.next(ctx)
		if err != nil {
			return done, err
		}
		if !ok {
			break
		}
		m := read(d, c)
		if !f.match(m) {
			continue // held until the scan closes, then back in the queue
		}
		exchange, key, err := target(m)
		if err != nil {
			return done, fmt.Errorf("message %s: %w", m.ID, err)
		}
		if err := pub.publish(ctx, exchange, key, copyOf(d, m)); err != nil {
			return done, fmt.Errorf("message %s: %w", m.ID, err)
		}
		if then != nil {
			if err := then(d, m); err != nil {
				return done, fmt.Errorf("message %s: sent to %s and still in %s: %w", m.ID, where(exchange, key), s.queue, err)
			}
		}
		if err := s.ack(d); err != nil {
			return done, fmt.Errorf("message %s: sent to %s, but removing it from %s failed, so it is in both: %w", m.ID, where(exchange, key), s.queue, err)
		}
		done = append(done, m)
	}
	return done, nil
}

// where names a destination in errors: a queue, or an exchange and key.
func where(exchange, key string) string {
	if exchange == "" {
		return key
	}
	return fmt.Sprintf("exchange %s with routing key %s", exchange, key)
}

// scan takes the messages that were ready in a queue when it began, in
// queue order, without acking them. It subscribes with a prefetch of
// exactly that many, so the broker pushes them without a round trip each
// (basic.get costs one per message), and falls back to basic.get when the
// subscription goes quiet: someone else took some, or returned ones are
// not ready yet.
type scan struct {
	conn  Broker
	ch    *amqp.Channel
	queue string
	left  int // ready when the scan began and not taken yet
	held  int // taken and neither acked nor returned
	// window is the subscription's prefetch: how many the broker pushes
	// before the scan acks some (0: no limit).
	window int

	deliveries <-chan amqp.Delivery // the subscription's; nil once it is closed
	cancelled  bool                 // basic.cancel was sent
	// silent counts the quiet periods in a row in which nothing came and
	// the queue had nothing ready.
	silent int
	// turn is the scan's turn at the queue, released once close has
	// handed every message back (see takeTurn).
	turn *turn
}

// scanTag names the scan's subscription on its own channel.
const scanTag = "warren-poison-scan"

// quiet is how long next waits for a pushed message before it asks with
// basic.get instead.
const quiet = time.Second

// The windows of a scan, besides a number of messages.
const (
	wholeQueue = 0  // every message ready when the scan begins
	noWindow   = -1 // none pushed: one basic.get per message
)

// openScan starts a scan of queue. window bounds how many messages the
// broker pushes to it: wholeQueue, noWindow, or at most that many.
func openScan(ctx context.Context, conn Broker, queue string, window int) (*scan, error) {
	t, err := takeTurn(ctx, conn, queue)
	if err != nil {
		return nil, err
	}
	s, err := startScan(ctx, conn, queue, window)
	if err != nil {
		t.release(ctx)
		return nil, err
	}
	s.turn = t
	return s, nil
}

// startScan is openScan once the scan has its turn at the queue.
func startScan(ctx context.Context, conn Broker, queue string, window int) (*scan, error) {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		_ = ch.Close()
		return nil, queueError(queue, err)
	}
	s := &scan{conn: conn, ch: ch, queue: queue, left: q.Messages}
	// A prefetch of 0 is no limit, so it is never 0 here; above the
	// field's 16 bits the broker pushes without a limit, and the scan
	// still takes only the messages that were there.
	prefetch := s.left
	if window != wholeQueue {
		prefetch = min(prefetch, window)
	}
	if prefetch > 0 {
		if prefetch > 65535 {
			prefetch = 0
		}
		if err := ch.Qos(prefetch, 0, false); err == nil {
			if d, err := ch.Consume(queue, scanTag, false, false, false, false, nil); err == nil {
				s.deliveries, s.window = d, prefetch
			}
		}
	}
	if s.deliveries == nil && ch.IsClosed() {
		// A refused subscription closes the channel; basic.get needs one.
		if s.ch, err = conn.OpenChannel(ctx); err != nil {
			return nil, fmt.Errorf("open channel: %w", err)
		}
	}
	return s, nil
}

// next returns the next message, or false once every message that was
// there at the start has been taken (or the queue ran dry early because
// someone else took some).
func (s *scan) next(ctx context.Context) (amqp.Delivery, bool, error) {
	if s.left <= 0 {
		return amqp.Delivery{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return amqp.Delivery{}, false, err
	}
	if s.deliveries != nil {
		if d, ok := s.pushed(ctx); ok {
			return s.took(d), true, nil
		}
		if err := ctx.Err(); err != nil {
			return amqp.Delivery{}, false, err
		}
	}
	d, ok, err := s.ch.Get(s.queue, false)
	if err != nil {
		return amqp.Delivery{}, false, fmt.Errorf("read %s: %w", s.queue, err)
	}
	if !ok {
		s.left = 0
		return amqp.Delivery{}, false, nil
	}
	return s.took(d), true, nil
}

// pushed waits for the subscription's next message. When none comes for a
// while and the broker has none left to push it, it cancels the
// subscription, and hands over what was already on its way, in order,
// before next turns to basic.get.
func (s *scan) pushed(ctx context.Context) (amqp.Delivery, bool) {
	if s.cancelled {
		return s.drain()
	}
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		select {
		case d, ok := <-s.deliveries:
			if ok {
				s.silent = 0
				return d, true
			}
			s.deliveries = nil
			return amqp.Delivery{}, false
		case <-timer.C:
			if s.slow() {
				timer.Reset(quiet)
				continue
			}
		case <-ctx.Done():
		}
		s.cancel()
		return s.drain()
	}
}

// slow reports whether a quiet subscription is only slow: the queue still
// has ready messages and the window lets the broker push them. Turning to
// basic.get then would take the rest under another consumer of the queue,
// and a quorum queue given both back when the scan closes may return the
// two lots out of order; so the scan keeps waiting for its subscription
// (on a loaded machine a gap of seconds between pushes happens).
func (s *scan) slow() bool {
	if s.window > 0 && s.held >= s.window {
		return false
	}
	q, err := s.ch.QueueDeclarePassive(s.queue, true, false, false, false, nil)
	if err != nil {
		return false
	}
	if q.Messages > 0 {
		return true
	}
	// Nothing ready, yet messages the scan has not received: a quorum
	// queue hands its messages to the subscription ahead of the channel
	// sending them, so on a loaded broker they are on their way. With no
	// other consumer of the queue to have taken them, keep waiting a while.
	s.silent++
	return q.Consumers <= 1 && s.silent < silentLimit
}

// silentLimit is how many quiet periods in a row slow waits for messages
// on their way while the queue shows none ready.
const silentLimit = 15

// cancel ends the subscription. The messages it delivered stay held.
func (s *scan) cancel() {
	if s.deliveries != nil && !s.cancelled {
		s.cancelled = true
		_ = s.ch.Cancel(scanTag, false)
	}
}

// drain hands over a delivery sent before the subscription ended: after
// basic.cancel the channel closes once every delivery sent before the
// broker's cancel-ok has been handed over.
func (s *scan) drain() (amqp.Delivery, bool) {
	d, ok := <-s.deliveries
	if !ok {
		s.deliveries = nil
	}
	return d, ok
}

func (s *scan) took(d amqp.Delivery) amqp.Delivery {
	s.left--
	s.held++
	return d
}

// ack removes a message taken by next from the queue.
func (s *scan) ack(d amqp.Delivery) error {
	if err := d.Ack(false); err != nil {
		return err
	}
	s.held--
	return nil
}

// returnStall bounds how long close waits for returned messages to be
// ready again while their count does not move and the queue has a
// consumer: that consumer may be taking them. As long as the count grows
// close waits, however long a loaded broker takes to return tens of
// thousands: a scan started before they are all back (the next List,
// Groups or Replay) would take some and hand them back after the rest, out
// of order, or find the queue short.
const returnStall = 10 * time.Second

// returnStallAlone is the same bound when the queue has no consumer, so
// nobody but basic.get can be taking the messages. A quorum queue applies
// the return of 50,000 at once, after the count stood at zero for seconds
// (4.5 s on two busy cores here; past returnStall on a loaded CI machine,
// where the next scan then found the queue empty). A stopped broker ends
// the wait sooner, through the error of asking for the count.
const returnStallAlone = 2 * time.Minute

// close hands every message taken and not acked back to the queue, and
// waits until the queue shows them ready again (or ctx is done). A quorum
// queue takes them back a few milliseconds after the channel is gone;
// without the wait, a List followed at once by a Replay would not see them.
//
// A scan that stopped early (at a limit, at the message it looked for, at
// an error) first takes the rest of the messages that were there when it
// began, whenever it holds some or the broker may have pushed it some: a
// quorum queue puts returned messages behind those nobody took, so
// handing back only part of the queue would reorder it. Handed back
// whole, the queue keeps its order. A scan that holds nothing and has no
// subscription (one basic.get at a time, each message removed) reads no
// further.
func (s *scan) close(ctx context.Context) {
	defer s.turn.release(ctx)
	if s.held > 0 || s.deliveries != nil {
		for {
			if _, ok, err := s.next(ctx); err != nil || !ok {
				break
			}
		}
	}
	// Nothing is pushed to the scan while it hands messages back; what was
	// pushed and not taken is held too.
	s.cancel()
	for s.deliveries != nil {
		if _, ok := s.drain(); ok {
			s.held++
		}
	}
	var before int
	if s.held > 0 {
		if q, err := s.ch.QueueDeclarePassive(s.queue, true, false, false, false, nil); err == nil {
			before = q.Messages
		}
	}
	if s.held > 0 {
		// Tag 0 with multiple: every message the channel holds.
		_ = s.ch.Nack(0, true, true)
	}
	_ = s.ch.Close()
	if s.held == 0 {
		return
	}
	ch, err := s.conn.OpenChannel(ctx)
	if err != nil {
		return
	}
	defer ch.Close()
	last, moved := -1, time.Now()
	for ctx.Err() == nil {
		q, err := ch.QueueDeclarePassive(s.queue, true, false, false, false, nil)
		if err != nil || q.Messages >= before+s.held {
			return
		}
		stall := returnStallAlone
		if q.Consumers > 0 {
			stall = returnStall
		}
		if q.Messages != last {
			last, moved = q.Messages, time.Now()
		} else if time.Since(moved) > stall {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publisher publishes one message at a time and waits for its confirm.
type publisher struct {
	ch      *amqp.Channel
	returns chan amqp.Return
}

func openPublisher(ctx context.Context, conn Broker) (*publisher, error) {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	// The broker sends a message's basic.return before its basic.ack, and
	// amqp091 hands both over from one goroutine in that order, so a return
	// is in this buffer by the time the confirm is seen.
	p := &publisher{ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 1))}
	return p, nil
}

// publish sends msg to an exchange with a routing key ("" and a queue
// name for one queue), mandatory, and waits for the broker to confirm it.
func (p *publisher) publish(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	to := where(exchange, key)
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, msg)
	if err != nil {
		return fmt.Errorf("publish to %s: %w", to, err)
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		return fmt.Errorf("publish to %s: waiting for the confirm: %w", to, err)
	}
	if !acked {
		return fmt.Errorf("publish to %s: the broker did not confirm it (nacked: a full queue rejects publishes, or the channel closed)", to)
	}
	select {
	case r := <-p.returns:
		return fmt.Errorf("publish to %s: returned unroutable: %s", to, r.ReplyText)
	default:
		return nil
	}
}

func (p *publisher) close() { _ = p.ch.Close() }

// checkQueue reports whether queue exists, on a channel of its own: a
// missing queue makes the broker close the channel.
func checkQueue(ctx context.Context, conn Broker, queue string) error {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err != nil {
		return queueError(queue, err)
	}
	return nil
}

// ErrNoQueue is matched by the error for a queue that does not exist.
var ErrNoQueue = errors.New("queue does not exist")

// NoQueueError is the error for a queue that does not exist on the broker
// the connection reached: the topology is not declared there, or the
// connection is to another broker or vhost than the services'. It matches
// [ErrNoQueue]. The functions of this package never see a URL, so the
// error names none; a caller that knows where it connected can say so
// (warren replay names the broker and vhost).
type NoQueueError struct {
	Queue string // the queue's name
}

func (e *NoQueueError) Error() string {
	return fmt.Sprintf("%v: %q; declare the topology first", ErrNoQueue, e.Queue)
}

// Is reports whether target is [ErrNoQueue].
func (e *NoQueueError) Is(target error) bool { return target == ErrNoQueue }

func queueError(queue string, err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return &NoQueueError{Queue: queue}
	}
	return fmt.Errorf("inspect queue %q: %w", queue, err)
}
