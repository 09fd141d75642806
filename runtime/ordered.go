package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// An ordered consumer (topology.Consumer.Shards) handles the facts of one
// ordering key one at a time, in the order they were published, and
// different keys in parallel:
//
//   - Each shard queue has a single active consumer, so one instance at a
//     time reads a shard, in queue order; the consistent-hash exchange puts
//     all facts of a key in the same shard.
//   - Within an instance, deliveries of every shard are queued per key; the
//     concurrency workers each take a key that is not being handled and
//     handle its facts in arrival order.
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
//     poisoned fact's id, until that fact itself comes back (a replay);
//     parking lasts as long as the consumer runs.
//   - An unavailable dependency ([Unavailable]) is waited out in place
//     without spending attempts.
//
// Shutdown lets running handlers finish (bounded by the shutdown timeout)
// and then closes the channel: the broker returns every unacked fact to
// its shard in order, for the next active consumer. The consumer is never
// cancelled while facts are in hand, because the single-active-consumer
// rule would hand the shard to the next instance while this one still
// works on an earlier fact of a key.

// keyQueues holds the deliveries of one channel by ordering key.
type keyQueues struct {
	mu      sync.Mutex
	pending map[string][]amqp.Delivery // per key, arrival order; the head is in hand while its key is busy
	ready   chan string                // keys with work, not yet taken by a worker
}

// add queues d behind the facts of its key and reports whether the key was
// idle (so the caller hands it to a worker).
func (q *keyQueues) add(key string, d amqp.Delivery) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending[key] = append(q.pending[key], d)
	return len(q.pending[key]) == 1
}

// head returns the fact of key to handle next.
func (q *keyQueues) head(key string) amqp.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending[key][0]
}

// done drops the head of key and reports whether more facts of it wait.
func (q *keyQueues) done(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	rest := q.pending[key][1:]
	if len(rest) == 0 {
		delete(q.pending, key)
		return false
	}
	q.pending[key] = rest
	return true
}

// streamOrdered consumes every shard queue on r's channel until the
// channel ends or Run's ctx is cancelled.
func (c *Consumer) streamOrdered(ctx context.Context, r *channelRun) (end bool, err error) {
	q := &keyQueues{pending: map[string][]amqp.Delivery{}, ready: make(chan string, len(c.spec.Shards)*c.opts.prefetch+1)}
	stop := make(chan struct{})
	halt := sync.OnceFunc(func() { close(stop) })
	defer halt()
	var readers sync.WaitGroup
	ended := make(chan string, 1)
	for _, shard := range c.spec.Shards {
		deliveries, err := r.ch.Consume(shard, consumerTag(c.spec.Name), false, false, false, false, nil)
		if err != nil {
			var ae *amqp.Error
			if errors.As(err, &ae) && ae.Code == amqp.NotFound {
				return true, fmt.Errorf("consumer %q: shard queue %q does not exist: declare the topology (Config.Topology)", c.spec.Name, shard)
			}
			return false, fmt.Errorf("consume %q: %w", shard, err)
		}
		readers.Go(func() {
			for d := range deliveries {
				key, _ := d.Headers[HeaderOrderingKey].(string)
				if q.add(key, d) {
					q.ready <- key
				}
			}
			select { // the broker cancelled the shard's consumer, or the channel ended
			case ended <- shard:
			default:
			}
		})
	}
	c.log.Debug("consuming shards", "shards", c.spec.Shards, "url", r.s.url)
	var workers sync.WaitGroup
	for range c.opts.concurrency {
		workers.Go(func() { c.orderedWorker(r, q, stop) })
	}
	// The readers end when the channel does; then no key is added.
	go func() { readers.Wait(); close(q.ready) }()
	idle := make(chan struct{})
	go func() { workers.Wait(); close(idle) }()

	select {
	case e := <-r.closed:
		halt()
		return c.channelClosed(ctx, r, idle, e)
	case shard := <-ended:
		halt()
		select {
		case e := <-r.closed: // the channel ended, and every shard's deliveries with it
			return c.channelClosed(ctx, r, idle, e)
		default:
		}
		// A shard without its consumer would wait unread: start over on
		// a new channel (Run resumes), the unacked facts returning. The
		// handlers are waited for as when the channel closes.
		if end, err := c.channelClosed(ctx, r, idle, nil); end {
			return end, err
		}
		return false, fmt.Errorf("the broker cancelled the consumer of shard %q (was the queue deleted?)", shard)
	case <-ctx.Done():
		halt()
		t := time.NewTimer(c.opts.shutdownTimeout)
		defer t.Stop()
		select {
		case <-idle:
		case <-r.closed:
		case <-t.C:
			r.cancelHandlers()
			return true, fmt.Errorf("consumer %q: handlers still running after the %s shutdown timeout were cancelled; their messages return to the queue", c.spec.Name, c.opts.shutdownTimeout)
		}
		// Closing the channel (consume's defer) returns what is unacked.
		c.log.Info("consumer stopped")
		return true, nil
	}
}

// orderedWorker takes keys with work and handles their facts in arrival
// order, until the consumer stops or its channel ends.
func (c *Consumer) orderedWorker(r *channelRun, q *keyQueues, stop <-chan struct{}) {
	for {
		var key string
		select {
		case <-stop:
			return
		case k, ok := <-q.ready:
			if !ok {
				return
			}
			key = k
		}
		for !closed(stop) {
			c.processOrdered(r, stop, q.head(key))
			if !q.done(key) {
				break
			}
		}
	}
}

// processOrdered handles one fact in place until it is settled or the
// consumer stops (then it stays unacked and returns to its shard).
func (c *Consumer) processOrdered(r *channelRun, stop <-chan struct{}, d amqp.Delivery) {
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
	for {
		dup, err := c.handle(r.hctx, in)
		switch {
		case dup:
			c.ack(in, DuplicateSkipped)
			return
		case err == nil:
			c.ack(in, Acked)
			return
		case IsPermanent(err) || !IsUnavailable(err) && in.attempt >= c.spec.MaxAttempts:
			if !c.poisonOrdered(r.hctx, in, err) {
				c.abandonChannel(r, in)
			}
			return
		}
		wait := c.spec.Delay(in.attempt)
		if IsUnavailable(err) {
			// Waiting out an outage spends no attempt, so a ladder of no
			// delays (maxAttempts 1, or backoff []) must not turn it into
			// a busy loop against the dependency that is down.
			wait = max(wait, c.outage.policy.ProbeMin)
			c.log.Warn("dependency unavailable; the fact is tried again in place without spending an attempt", append(logAttrs(in, err), "delay", wait)...)
		} else {
			c.count(RetriedInPlace, in.routingKey)
			c.log.Warn("handler failed; retrying in place, the later facts of its key waiting", append(logAttrs(in, err), "delay", wait)...)
			in.attempt++
		}
		if !waitUnlessStopped(r.hctx, stop, wait) {
			return
		}
	}
}

// abandonChannel closes the channel after a fact went back to its shard
// unsettled (its poison copy was not confirmed): the fact would otherwise
// come back behind the later facts of its key. Closing returns every
// unacked fact to its shard in order, and the consumer resumes on a new
// channel.
func (c *Consumer) abandonChannel(r *channelRun, in inbound) {
	c.log.Warn("a fact went back to its shard unsettled; reopening the channel so that its key's later facts wait behind it",
		"message_id", in.d.MessageId, "routing_key", in.routingKey)
	_ = r.ch.Close()
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
