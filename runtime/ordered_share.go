package runtime

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// Sharing shards among instances. A shard queue has a single active
// consumer: the instance that subscribed first. Instances started together
// spread the shards by timing, and one started later would stand by on
// every shard. So each instance reads every shard on a channel of its own
// and, every balance interval, counts the instances (the consumers of the
// members queue, [MembersQueue]) and the shards it is active on (those that
// delivered to it within two intervals, or whose facts it has in hand).
// Holding more than its share (shards / instances, rounded up), it hands
// the surplus over, one shard at a time:
//
//  1. The shard's keys are held: no worker takes another of its facts.
//  2. Once no worker has one of its facts in hand (retries in place
//     included), its channel is closed: the broker returns the facts not
//     yet handled to the shard in order, and the next instance in line
//     becomes active and reads them first. Per-key order holds across the
//     hand-over as across a stop: nothing of the shard is in hand here
//     when the other instance starts. Each fact returned counts one more
//     delivery towards the shard's delivery limit, so the shard is kept,
//     to be tried at a later round, while it holds a fact returned before
//     ([Consumer.handsBack]).
//  3. The shard is consumed again on a new channel, which puts this
//     instance at the back of its line, as a standby.
//
// An instance that got more than its share this way hands over in turn,
// so the shards settle at about shares each. What the instance remembered
// of the shard's keys (their last sequence numbers) is forgotten: when the
// shard comes back, later, its keys start fresh instead of reporting the
// facts handled meanwhile elsewhere as a gap. A shard with a parked key
// (onPoison park) is not handed over when the park lives in this
// instance's memory only; it stays until the park lifts or the instance
// stops. With a guard that keeps parks ([ParkStore]) it is handed over
// like any other. A shard whose facts stay in hand longer than the
// hand-over's patience (a long retry in place) is let go again and tried
// at a later round.

// DefaultBalanceInterval is how often an ordered consumer compares the
// shards it reads with its share.
const DefaultBalanceInterval = 5 * time.Second

// handOverPatience bounds how long a hand-over waits for the shard's facts
// in hand to settle, in balance intervals.
const handOverPatience = 6

var errHandOverStopped = errors.New("stopped")

// membersExpiry is how long the members queue of an ordered consumer
// outlives its last instance.
const membersExpiry = 10 * time.Minute

// MembersQueue is the queue that counts the running instances of the
// ordered consumer named consumer: each instance consumes it (nothing is
// ever published to it), so its consumer count is the number of
// instances. The shard queues cannot tell: a single-active-consumer quorum
// queue counts only its active consumer. Each instance declares it when it
// starts (a quorum queue, so that it survives the loss of a node, deleted
// by the broker 10 minutes after its last instance stopped).
func MembersQueue(consumer string) string { return consumer + ".instances" }

// balance hands surplus shards over until r stops. It runs beside an
// ordered consumer's workers.
func (q *keyQueues) balance(r *channelRun, c *Consumer, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var m members
	defer m.close()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		instances, err := m.count(r, MembersQueue(c.spec.Name))
		if err != nil {
			// Shards are not shared out meanwhile; consuming goes on.
			c.log.Debug("ordered consumer: cannot count the instances", "queue", MembersQueue(c.spec.Name), "err", c.conn.redact(err))
			continue
		}
		if instances < 2 {
			continue
		}
		share := (len(q.shards) + instances - 1) / instances
		mine := q.active(2*every, c)
		for len(mine) > share {
			k := rand.IntN(len(mine))
			i := mine[k]
			mine = append(mine[:k], mine[k+1:]...)
			err := q.handOver(r, i, time.Duration(handOverPatience)*every, c)
			switch {
			case errors.Is(err, errHandOverStopped):
				return
			case errors.Is(err, errShardKept):
				c.log.Info("ordered consumer: shard kept for now", "shard", q.shards[i], "err", err)
				continue
			case err != nil:
				c.log.Warn("ordered consumer: shard not handed over", "shard", q.shards[i], "err", err)
				continue
			}
			c.log.Info("ordered consumer: shard handed over to another instance", "shard", q.shards[i], "instances", instances, "share", share)
		}
	}
}

// members is an instance's place in its consumer's members queue: a
// channel of its own, so that a failure there never touches the shards.
type members struct {
	ch transport.Channel
}

// count joins the members queue if it has not yet and returns its
// consumer count.
func (m *members) count(r *channelRun, queue string) (int, error) {
	if m.ch == nil {
		ch, err := r.s.conn.Channel()
		if err != nil {
			return 0, err
		}
		args := amqp.Table{"x-queue-type": "quorum", "x-expires": membersExpiry.Milliseconds()}
		if _, err := ch.QueueDeclare(queue, true, false, false, false, args); err != nil {
			_ = ch.Close()
			return 0, err
		}
		if _, err := ch.Consume(queue, "", true, false, false, false, nil); err != nil {
			_ = ch.Close()
			return 0, err
		}
		m.ch = ch
	}
	info, err := m.ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		m.close()
		return 0, err
	}
	return info.Consumers, nil
}

func (m *members) close() {
	if m.ch != nil {
		_ = m.ch.Close()
		m.ch = nil
	}
}

// active returns the shards this instance is the active consumer of, as
// far as it can tell: those that delivered within window or whose facts
// it has in hand; not those with a parked key, unless the guard keeps
// parks (the next instance then reads them from its database).
func (q *keyQueues) active(window time.Duration, c *Consumer) []int {
	durable := c.parkStore() != nil
	q.mu.Lock()
	inHand := make([]bool, len(q.shards))
	for _, i := range q.shardOf {
		inHand[i] = true
	}
	var mine []int
	for i := range q.shards {
		if (inHand[i] || time.Since(q.seen[i]) < window) && (durable || !c.ordered.parksTag(q.tags[i])) {
			mine = append(mine, i)
		}
	}
	q.mu.Unlock()
	return mine
}

// handOver gives shard i to the next instance in its line (see above).
func (q *keyQueues) handOver(r *channelRun, i int, patience time.Duration, c *Consumer) error {
	q.mu.Lock()
	if err := q.keepFor(i, c); err != nil {
		q.mu.Unlock()
		return err
	}
	q.holding[i] = true
	for key, st := range q.state {
		if q.shardOf[key] == i && st == queued {
			q.state[key] = held // its entry in ready is stale now
		}
	}
	q.mu.Unlock()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		q.mu.Lock()
		n := q.busy[i]
		q.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-q.freed:
		case <-r.stop:
			q.unhold(i)
			return errHandOverStopped
		case <-deadline.C:
			q.unhold(i)
			return fmt.Errorf("%d of its facts still in hand after %s", n, patience)
		}
	}
	// Facts that arrived while the shard's facts in hand settled. One the
	// broker sends between this check and the close below goes back
	// counted once more, as on a stop: a narrow window, and a fact that it
	// brings to its last delivery is poisoned with its key parked as any
	// other (only one already on its last delivery would be dead-lettered
	// by the broker).
	q.mu.Lock()
	err := q.keepFor(i, c)
	q.mu.Unlock()
	if err != nil {
		q.unhold(i)
		return err
	}
	q.readers.Add(1) // the shard's next reader, so that ready stays open
	old := q.read[i]
	r.closeOwn(q.shards[i])
	<-old // nothing more of the shard is added
	q.mu.Lock()
	for key := range q.state {
		if q.shardOf[key] == i {
			delete(q.pending, key)
			delete(q.state, key)
			delete(q.shardOf, key)
		}
	}
	q.seen[i] = time.Time{}
	tag := q.tags[i]
	q.mu.Unlock()
	c.ordered.forgetTag(tag)
	feed, err := r.consumeOwn(q.shards[i])
	q.mu.Lock()
	q.holding[i] = false
	q.mu.Unlock()
	if err != nil {
		// The shard would wait unread: the engine starts over.
		q.readers.Done()
		select {
		case q.ended <- q.shards[i]:
		default:
		}
		return fmt.Errorf("consume again: %w", err)
	}
	q.startReader(i, feed)
	return nil
}

// errShardKept is a hand-over put off to a later round: it would spend
// what the shard queue's delivery limit leaves a fact in hand, or leave
// more stale keys in ready than it has room for.
var errShardKept = errors.New("kept")

// keepFor returns an error wrapping errShardKept when closing shard i's
// channel now would return a fact in hand that a hand-over must not
// return (see [Consumer.handsBack]), or when the keys of the shard's facts
// in hand, stale in ready once the shard is gone, would take the stale
// entries past their bound (see [newKeyQueues]): the workers, all busy,
// have yet to skip those that earlier hand-overs left. q.mu is held.
func (q *keyQueues) keepFor(i int, c *Consumer) error {
	for key, ds := range q.pending {
		if q.shardOf[key] != i {
			continue
		}
		for _, d := range ds {
			if !c.handsBack(d) {
				return fmt.Errorf("%w: fact %s of ordering key %q (x-delivery-count %d, deliveryLimit %d) is handled here first, so that the hand-over spends none of its last deliveries",
					errShardKept, d.MessageId, key, deliveryCount(d), c.spec.DeliveryLimit)
			}
		}
	}
	stale, mine := 0, 0
	for key := range q.listed {
		switch _, ok := q.state[key]; {
		case !ok:
			stale++
		case q.shardOf[key] == i:
			mine++
		}
	}
	if bound := len(q.shards) * q.prefetch; stale+mine > bound {
		return fmt.Errorf("%w: the workers, all busy, have %d keys of shards handed over before still to skip, and %d more would pass the %d that fit", errShardKept, stale, mine, bound)
	}
	return nil
}

// handsBack reports whether a hand-over may return d to its shard. Each
// return raises a quorum queue's x-delivery-count, and a return past the
// shard's delivery limit has the broker dead-letter the fact, however it
// came about (RabbitMQ 3.10 and 4.0 alike; nothing over AMQP 0-9-1
// returns a message uncounted). So a hand-over returns only facts never
// returned before, and none whose return would make this the last
// delivery its shard allows: hand-overs, however many, spend at most one
// of a fact's deliveries, the others staying for stops, crashes and lost
// connections, as on a work queue. A shard holding another fact stays
// until that one is handled (it came back first, so it is among the
// shard's first), and is handed over at a later round. Classic shards
// count nothing (x-delivery-count stays unset) and have no limit; a
// consumer whose DeliveryLimit is not known (0, from code generated
// before it was) still returns only facts never returned before.
func (c *Consumer) handsBack(d amqp.Delivery) bool {
	return deliveryCount(d) == 0 && c.spec.DeliveryLimit != 1
}

// unhold ends a hand-over that did not happen: the shard's held keys are
// handed out again.
func (q *keyQueues) unhold(i int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.holding[i] = false
	for key, st := range q.state {
		if q.shardOf[key] == i && st == held {
			q.queue(key)
		}
	}
}
