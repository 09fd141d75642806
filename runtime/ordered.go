package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
)

// An ordered consumer (topology.Consumer.Shards) handles the facts of one
// ordering key one at a time, in the order they were published, and
// different keys in parallel:
//
//   - Each shard queue has a single active consumer, so one instance at a
//     time reads a shard, in queue order; the consistent-hash exchange puts
//     all facts of a key in the same shard. Each shard is read on a channel
//     of its own, and the instances share the shards out by handing a
//     shard over with nothing of it in hand (ordered_share.go).
//   - Within an instance, deliveries of every shard are queued per key; the
//     concurrency workers each take a key that no other worker holds and
//     handle its oldest fact; once that fact is settled the key is free
//     for the next worker, so a key's facts are handled one at a time, in
//     arrival order.
//   - A failing fact is retried in place: after each failed attempt the
//     worker waits the ladder's delay and calls the handler again, up to
//     MaxAttempts, without acking, so the later facts of its key stay
//     queued behind it. Other keys keep going, until the key's later facts
//     fill the shard's prefetch window: a shard (its channel consumer) has
//     at most Prefetch unacked deliveries, so once Prefetch-1 later facts
//     of the failing key are in hand the broker sends that shard nothing
//     more and its other keys wait too. Other shards are not held back.
//     Each fact waiting to be retried occupies one of the workers.
//   - After the last attempt, or on a permanent error, the fact goes to
//     poison (confirmed, then acked). Then the key's later facts continue
//     (the default), or, with Park, follow it to poison, marked with the
//     poisoned fact's id, until that fact itself comes back replayed from
//     poison (a higher x-replay-count; a plain redelivery of it is acked,
//     its poison copy being confirmed already); parking lasts as long as
//     the consumer runs, or with a [ParkStore] guard until the replay.
//   - A fact on the last delivery its quorum shard allows (x-delivery-count
//     equal to DeliveryLimit) goes to poison before the handler sees it,
//     like any poisoned fact, its key parked with Park: left to the broker,
//     its next return would dead-letter it unseen, and its key's later
//     facts would be handled before it (lastDelivery).
//   - An unavailable dependency ([Unavailable]) is waited out in place
//     without spending attempts.
//   - A deferral ([Defer]) is waited out in place too, unacked, until it
//     is due, without spending an attempt: the key's later facts wait
//     behind it, other keys go on. The wait is bounded by
//     WithMaxDeferInPlace (below RabbitMQ's consumer_timeout); a longer
//     deferral is a failure. The deferrals are counted in memory (nothing
//     is republished), so MaxDeferrals bounds them while the fact stays in
//     hand; a fact that returns to its shard starts counting again.
//
// Shutdown lets running handlers finish (bounded by the shutdown timeout)
// and then closes the channel: the broker returns every unacked fact to
// its shard in order, for the next active consumer. The consumer is never
// cancelled while facts are in hand, because the single-active-consumer
// rule would hand the shard to the next instance while this one still
// works on an earlier fact of a key.

// orderedKind is an ordered consumer on the engine: it reads every shard
// queue on one channel, queues the deliveries per ordering key, and stops
// in place.
type orderedKind struct{ c *Consumer }

func (k orderedKind) queues() []string { return k.c.spec.Shards }

func (k orderedKind) source(r *channelRun, feeds []<-chan amqp.Delivery) source[amqp.Delivery] {
	q := newKeyQueues(k.c.spec.Shards, feeds, k.c.opts.prefetch)
	if len(k.c.spec.Shards) > 1 {
		// The balancer counts as a reader, so that ready stays open while
		// it may start a shard's next reader; it ends with r.
		q.readers.Add(1)
		go func() {
			defer q.readers.Done()
			q.balance(r, k.c, k.c.opts.balanceEvery)
		}()
	}
	return q
}

// ownChannels: each shard is read on a channel of its own, so that one can
// be handed over to another instance (ordered_share.go).
func (orderedKind) ownChannels() bool { return true }

func (k orderedKind) work(r *channelRun, d amqp.Delivery) { k.c.processOrdered(r, d) }

// giveBack is never called: an ordered consumer stops in place, and its
// unacked facts return to their shards in order when the channel closes.
func (k orderedKind) giveBack(d amqp.Delivery, why string) { k.c.giveBack(d, why) }

func (orderedKind) traits() traits { return traits{stopsInPlace: true, queueNoun: "shard queue"} }

// keyQueues holds the deliveries of one channel by ordering key: a worker
// takes a key that no other worker holds and gets its oldest fact; the key
// is free again once that fact is settled.
//
// Each key with facts in hand is in one state: queued (in ready, once),
// busy (a worker has its oldest fact), waiting (kept in hand, ready again
// after a wait) or held (its shard is being handed over). An entry of
// ready whose key is no longer queued is stale and skipped: a hand-over
// drops keys that may still be in ready, and a key held while queued
// keeps its entry. A key has at most one entry in ready, stale or not
// (listed): a key queued again while it has one is taken through that
// entry, so that hand-overs tried and given up round after round while
// every worker is busy do not fill ready with copies of the same keys.
type keyQueues struct {
	shards   []string
	mu       sync.Mutex
	pending  map[string][]amqp.Delivery // per key, arrival order; the head is in hand while its key is busy
	state    map[string]keyState
	shardOf  map[string]int  // the shard a key's facts came from
	busy     []int           // per shard: its keys that workers hold
	holding  []bool          // per shard: being handed over; its keys are not handed out
	seen     []time.Time     // per shard: when it last delivered
	tags     []string        // per shard: the consumer tag of its deliveries
	freed    chan struct{}   // a worker let go of a key
	ready    chan string     // keys with work, not yet taken by a worker
	listed   map[string]bool // keys with an entry in ready, stale or not
	ended    chan string     // a shard whose feed ended (its consumer cancelled, or the channel gone)
	drained  bool            // every feed ended and ready is closed: keys are no longer handed out
	prefetch int             // per shard: the most unacked deliveries its channel holds
	readers  sync.WaitGroup
	read     []chan struct{} // per shard: closed when the reader of its current feed ends
}

type keyState int

const (
	queued keyState = iota + 1
	busy
	waiting
	held
)

// newKeyQueues reads each shard's feed into per-key queues until the
// feeds end; then ready closes.
func newKeyQueues(shards []string, feeds []<-chan amqp.Delivery, prefetch int) *keyQueues {
	// A key is in ready at most once (listed), live only while it has an
	// unacked fact: the prefetch per consumer bounds how many there are.
	// Stale entries, of keys a hand-over dropped, are at most as many
	// again: a hand-over that would leave more waits (keepFor).
	q := &keyQueues{shards: shards, pending: map[string][]amqp.Delivery{}, state: map[string]keyState{}, shardOf: map[string]int{}, listed: map[string]bool{}, prefetch: prefetch,
		busy: make([]int, len(shards)), holding: make([]bool, len(shards)), seen: make([]time.Time, len(shards)), tags: make([]string, len(shards)),
		freed: make(chan struct{}, 1), ready: make(chan string, 2*len(shards)*prefetch+1), ended: make(chan string, 1),
		read: make([]chan struct{}, len(shards))}
	for i, feed := range feeds {
		q.readers.Add(1)
		q.startReader(i, feed)
	}
	// The readers end when the channel does; then no key is added, and
	// the workers end once they took what ready still holds.
	go func() {
		q.readers.Wait()
		q.mu.Lock()
		defer q.mu.Unlock()
		q.drained = true
		close(q.ready)
	}()
	return q
}

// startReader reads shard i's feed into the queues; the caller has added
// it to q.readers. A feed that ends while its shard is not being handed
// over reports the shard lost.
func (q *keyQueues) startReader(i int, feed <-chan amqp.Delivery) {
	done := make(chan struct{})
	q.read[i] = done
	go func() {
		defer q.readers.Done()
		defer close(done)
		for d := range feed {
			key, _ := d.Headers[HeaderOrderingKey].(string)
			q.add(i, key, d)
		}
		q.mu.Lock()
		handing := q.holding[i]
		q.mu.Unlock()
		if !handing {
			select {
			case q.ended <- q.shards[i]:
			default:
			}
		}
	}()
}

// add queues d of shard i behind the facts of its key; an idle key goes to
// ready.
func (q *keyQueues) add(i int, key string, d amqp.Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seen[i], q.tags[i] = time.Now(), d.ConsumerTag
	q.pending[key] = append(q.pending[key], d)
	if _, ok := q.state[key]; !ok {
		q.shardOf[key] = i
		q.queue(key)
	}
}

// queue makes key ready, or held if its shard is being handed over; q.mu
// is held.
func (q *keyQueues) queue(key string) {
	if q.holding[q.shardOf[key]] {
		q.state[key] = held
		return
	}
	q.state[key] = queued
	if !q.drained && !q.listed[key] {
		// Never blocks: ready holds each key at most once, and there are
		// no more keys than unacked deliveries and stale entries.
		q.listed[key] = true
		q.ready <- key
	}
}

// next takes a key with work and returns its oldest fact; the key stays
// busy until done. It returns false once stop closes or the feeds ended.
func (q *keyQueues) next(stop <-chan struct{}) (amqp.Delivery, bool) {
	d, got := q.take(stop, nil)
	return d, got == taken
}

// took is what [keyQueues.take] came to.
type took int

const (
	taken   took = iota // a key's oldest fact
	stopped             // stop closed, or the feeds ended
	timeout             // after fired first
)

// take is next, giving up when after fires first (nil: never).
func (q *keyQueues) take(stop <-chan struct{}, after <-chan time.Time) (amqp.Delivery, took) {
	for {
		select {
		case <-stop:
			return amqp.Delivery{}, stopped
		case <-after:
			return amqp.Delivery{}, timeout
		case key, ok := <-q.ready:
			if !ok {
				return amqp.Delivery{}, stopped
			}
			if closed(stop) {
				q.mu.Lock()
				delete(q.listed, key)
				q.mu.Unlock()
				return amqp.Delivery{}, stopped
			}
			if d, ok := q.claim(key); ok {
				return d, taken
			}
		}
	}
}

// claim makes a queued key busy and returns its oldest fact; false for a
// stale entry of ready, or a key whose shard is being handed over. The
// key's entry in ready was taken either way.
func (q *keyQueues) claim(key string) (amqp.Delivery, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.listed, key)
	if q.state[key] != queued {
		return amqp.Delivery{}, false
	}
	i := q.shardOf[key]
	if q.holding[i] {
		q.state[key] = held
		return amqp.Delivery{}, false
	}
	q.state[key] = busy
	q.busy[i]++
	return q.pending[key][0], true
}

// release lets go of a busy key; q.mu is held.
func (q *keyQueues) release(key string) {
	q.busy[q.shardOf[key]]--
	select {
	case q.freed <- struct{}{}:
	default:
	}
}

// done drops the settled head of d's key; a key with more facts goes back
// to ready for the next free worker.
func (q *keyQueues) done(d amqp.Delivery) {
	key, _ := d.Headers[HeaderOrderingKey].(string)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.release(key)
	rest := q.pending[key][1:]
	if len(rest) == 0 {
		delete(q.pending, key)
		delete(q.state, key)
		delete(q.shardOf, key)
		return
	}
	q.pending[key] = rest
	q.queue(key)
}

// later makes d's key, whose head d stays, ready again after wait: the
// fact is tried again in place, its key's later facts waiting behind it.
func (q *keyQueues) later(d amqp.Delivery, wait time.Duration) {
	key, _ := d.Headers[HeaderOrderingKey].(string)
	q.mu.Lock()
	q.release(key)
	q.state[key] = waiting
	q.mu.Unlock()
	time.AfterFunc(wait, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.state[key] == waiting {
			q.queue(key)
		}
	})
}

func (q *keyQueues) lost() <-chan string { return q.ended }

// processOrdered handles one fact in place until it is settled or the
// consumer stops (then it stays unacked and returns to its shard).
func (c *Consumer) processOrdered(r *channelRun, d amqp.Delivery) {
	in := inspect(r.s, d)
	c.count(Delivered, in.routingKey)
	if d.Redelivered {
		c.count(Redelivered, in.routingKey)
	}
	if parked, settled := c.parkedBehind(r.hctx, in); parked {
		if !settled {
			c.abandonChannel(r, in)
		}
		return
	}
	c.checkSequence(in)
	if err := c.lastDelivery(in); err != nil {
		c.settleInPlace(r, &in, false, err)
		return
	}
	for {
		dup, err := c.handle(r.hctx, in)
		wait, again := c.settleInPlace(r, &in, dup, err)
		if !again || !waitUnlessStopped(r.hctx, r.stop, wait) {
			return
		}
	}
}

// settleInPlace settles one outcome of a fact of an ordered consumer (err
// is the handling's error as [Consumer.deferral] settles it): it acks the
// fact, or poisons it, or keeps it in hand to be tried again after wait
// (again), having counted the attempt or the deferral in in. A fact kept
// in hand holds back the later facts of its key; other keys go on.
func (c *Consumer) settleInPlace(r *channelRun, in *inbound, dup bool, err error) (wait time.Duration, again bool) {
	switch {
	case dup:
		c.ack(*in, DuplicateSkipped)
		return 0, false
	case err == nil:
		c.ack(*in, Acked)
		return 0, false
	case IsPermanent(err), !IsUnavailable(err) && deferredTo(err) == nil && in.attempt >= c.spec.MaxAttempts:
		if !c.poisonOrdered(r.hctx, *in, err) {
			c.abandonChannel(r, *in)
		}
		return 0, false
	case deferredTo(err) != nil:
		// Deferred in place: no attempt spent, the key's later facts
		// waiting behind it; a stop returns it to its shard in order.
		de := deferredTo(err)
		c.count(Deferred, in.routingKey)
		c.log.Info("deferred until "+de.DueAt.UTC().Format(dueAtLayout)+"; waiting in place, the later facts of its key waiting",
			append(logAttrs(*in, err), "deferrals", in.deferrals+1)...)
		in.deferrals++
		in.due = de.DueAt
		return deferredDelay(de.DueAt), true
	case IsUnavailable(err):
		// Waiting out an outage spends no attempt, so a ladder of no
		// delays (maxAttempts 1, or backoff []) must not turn it into a
		// busy loop against the dependency that is down.
		wait = max(c.spec.Delay(in.attempt), c.outage.policy.ProbeMin)
		c.log.Warn("dependency unavailable; the fact is tried again in place without spending an attempt", append(logAttrs(*in, err), "delay", wait)...)
		return wait, true
	}
	wait = c.spec.Delay(in.attempt)
	c.count(RetriedInPlace, in.routingKey)
	c.log.Warn("handler failed; retrying in place, the later facts of its key waiting", append(logAttrs(*in, err), "delay", wait)...)
	in.attempt++
	return wait, true
}

// headerDeliveryCount is the header in which a quorum queue counts a
// message's returns: every return unacked (a nack with requeue, a closed
// channel, a cancelled consumer, a lost connection) raises it by one, and
// a return that takes it past the queue's x-delivery-limit dead-letters
// the message instead (RabbitMQ 3.10 and 4.0 alike). Classic queues leave
// it unset.
const headerDeliveryCount = "x-delivery-count"

// deliveryCount is how often d was returned to its queue before this
// delivery.
func deliveryCount(d amqp.Delivery) int { return amqpmsg.HeaderInt(d.Headers, headerDeliveryCount) }

// lastDelivery returns the permanent error that poisons a fact of an
// ordered consumer on the last delivery its shard queue allows, without a
// call to the handler; nil for every other delivery. The broker would
// dead-letter such a fact on its next return itself, behind the
// consumer's back: its key would not be parked, and the key's later facts
// would be handled while it waits in poison. Poisoned here, the fact
// takes the way of every poisoned fact of an ordered consumer (with Park
// its key's later facts follow it), a crash-looping fact included: the
// process that takes its shard after the last crash poisons it. The
// handler so sees a fact at most DeliveryLimit times.
func (c *Consumer) lastDelivery(in inbound) error {
	limit, n := c.spec.DeliveryLimit, deliveryCount(in.d)
	if limit == 0 || n < limit {
		return nil
	}
	return Permanent(fmt.Errorf("delivered %d times, returned unsettled to its shard each time before (the process stopped, crashed or lost its connection while the fact was in hand): this is the last delivery the shard queue allows (deliveryLimit %d), so the fact goes to poison now rather than be dead-lettered by the broker on its next return", n+1, limit))
}

// abandonChannel closes the channel after a fact went back to its shard
// unsettled (its poison copy was not confirmed): the fact would otherwise
// come back behind the later facts of its key. Closing returns every
// unacked fact to its shard in order, and the consumer resumes on a new
// channel.
func (c *Consumer) abandonChannel(r *channelRun, in inbound) {
	c.log.Warn("a fact went back to its shard unsettled; reopening the channel so that its key's later facts wait behind it",
		"message_id", in.d.MessageId, "routing_key", in.routingKey)
	r.closeAll()
}

// waitUnlessStopped waits d and reports false if the consumer began to
// stop or its handlers were cancelled meanwhile.
func waitUnlessStopped(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
	case <-ctx.Done():
	}
	return false
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
