package runtime

import (
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
)

// An ordered batch consumer (topology.Consumer.Batch and Shards) takes its
// facts in batches and keeps the order of each ordering key by holding at
// most one fact per key in a batch: the oldest unsettled fact of each key,
// as an ordered consumer's worker takes it.
//
//   - It reads its shard queues as an ordered consumer does, queueing the
//     deliveries per key. A batch closes at Size keys or Wait after its
//     first fact; a key in a batch is busy until its fact is settled, so
//     two batches never hold facts of one key, and a key's next fact
//     reaches a later batch only once the one before it is settled.
//   - Each fact settles by the rules of an ordered consumer: done, it is
//     acked (one by one: a multiple ack would take the later facts of
//     other keys, still in hand, with it); failed, it stays in hand and
//     its key comes back in a batch after the ladder's delay, its key's
//     later facts waiting behind it; after the last attempt or on a
//     permanent error it goes to poison (and, with Park, its key's later
//     facts follow it); unavailable or deferred, it waits in place.
//   - A key with many facts waiting gives one to each batch, so a batch
//     fills with keys, not with the backlog of one key: the handler's
//     batches are as large as the number of keys with work.
//
// The other choice, a key's facts together in one batch in order, would
// let the handler act on a key's later facts before an earlier one that
// fails is retried: the order a failing fact must keep.

// orderedBatchKind is an ordered batch consumer on the engine: its source
// closes batches of keys, and it stops in place as an ordered consumer
// does.
type orderedBatchKind struct{ c *Consumer }

func (k orderedBatchKind) queues() []string { return k.c.spec.Shards }

func (k orderedBatchKind) source(_ *channelRun, feeds []<-chan amqp.Delivery) source[*batchJob] {
	return &keyBatches{
		keys: newKeyQueues(k.c.spec.Shards, feeds, k.c.opts.prefetch),
		size: k.c.spec.Batch.Size, wait: k.c.spec.Batch.Wait,
		held: map[uint64]inbound{}, filling: make(chan struct{}, 1),
	}
}

func (k orderedBatchKind) work(r *channelRun, j *batchJob) { k.c.processOrderedBatch(r, j) }

// giveBack is never called: the kind stops in place.
func (k orderedBatchKind) giveBack(j *batchJob, why string) {
	for _, d := range j.ds {
		k.c.giveBack(d, why)
	}
}

func (orderedBatchKind) traits() traits { return traits{stopsInPlace: true, queueNoun: "shard queue"} }

// keyBatches closes batches of one fact per key from the keys' queues.
type keyBatches struct {
	keys *keyQueues
	size int
	wait time.Duration
	// filling is held by the worker filling a batch, so that one batch
	// fills at a time; a channel, not a mutex, so that a worker waiting
	// for it can stop (and a test's virtual clock sees it blocked).
	filling chan struct{}
	mu      sync.Mutex
	held    map[uint64]inbound // facts tried again in place, by delivery tag: their attempts and deferrals so far
}

// next closes the next batch: it waits for a key with work, then takes
// more until the batch has size keys or its wait is over.
func (s *keyBatches) next(stop <-chan struct{}) (*batchJob, bool) {
	select {
	case s.filling <- struct{}{}:
	case <-stop:
		return nil, false
	}
	defer func() { <-s.filling }()
	first, got := s.keys.take(stop, nil)
	if got != taken {
		return nil, false
	}
	opened := time.Now()
	j := &batchJob{ds: []amqp.Delivery{first}}
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	for len(j.ds) < s.size {
		d, got := s.keys.take(stop, timer.C)
		if got == stopped {
			// What the batch took stays unacked and returns to its shard
			// in order when the channel closes.
			return nil, false
		}
		if got == timeout {
			break
		}
		j.ds = append(j.ds, d)
	}
	j.waited = time.Since(opened)
	s.mu.Lock()
	for _, d := range j.ds {
		if in, ok := s.held[d.DeliveryTag]; ok {
			delete(s.held, d.DeliveryTag)
			j.again = append(j.again, in)
		} else {
			j.again = append(j.again, inbound{})
		}
	}
	s.mu.Unlock()
	return j, true
}

// done frees the key of each fact of j that was settled, and makes the key
// of each fact kept in hand ready again once its wait is over.
func (s *keyBatches) done(j *batchJob) {
	for i, d := range j.ds {
		if i < len(j.later) && j.later[i].again {
			s.mu.Lock()
			s.held[d.DeliveryTag] = j.later[i].in
			s.mu.Unlock()
			s.keys.later(d, j.later[i].wait)
			continue
		}
		s.keys.done(d)
	}
}

func (s *keyBatches) lost() <-chan string { return s.keys.lost() }

// inPlace is what became of one fact of an ordered batch: kept in hand
// (again) to be tried once more after wait, as in, or settled.
type inPlace struct {
	in    inbound
	wait  time.Duration
	again bool
}

// processOrderedBatch checks, handles and settles the facts of an ordered
// batch, one per key, recording in j.later which stay in hand.
func (c *Consumer) processOrderedBatch(r *channelRun, j *batchJob) {
	ctx := r.hctx
	j.later = make([]inPlace, len(j.ds))
	facts := make([]*batchFact, 0, len(j.ds))
	at := make(map[*batchFact]int, len(j.ds)) // the fact's place in j.ds
	for i, d := range j.ds {
		in := j.again[i]
		if in.sess == nil {
			// First time in hand: counted, and checked against its key's
			// park and sequence, once.
			in = inspect(r.s, d)
			c.count(Delivered, in.routingKey)
			if d.Redelivered {
				c.count(Redelivered, in.routingKey)
			}
			if parked, settled := c.parkedBehind(ctx, in); parked {
				if !settled {
					c.abandonChannel(r, in)
				}
				continue
			}
			c.checkSequence(in)
			if err := c.lastDelivery(in); err != nil {
				wait, again := c.settleInPlace(r, &in, false, err)
				j.later[i] = inPlace{in: in, wait: wait, again: again}
				continue
			}
		}
		if c.otherCopy(in) {
			// The fact in another version, which the consumer handles
			// instead: acked unhandled, its key going on.
			wait, again := c.settleInPlace(r, &in, true, nil)
			j.later[i] = inPlace{in: in, wait: wait, again: again}
			continue
		}
		f, err := c.checkFact(in)
		if err != nil {
			// Fails the same on every attempt: poisoned now, on its own.
			wait, again := c.settleInPlace(r, &in, false, err)
			j.later[i] = inPlace{in: in, wait: wait, again: again}
			continue
		}
		at[f] = i
		facts = append(facts, f)
	}
	if len(facts) == 0 {
		return
	}
	if bm, ok := c.metrics.(BatchMetrics); ok {
		bm.ObserveBatch(c.name, len(facts), j.waited)
	}
	c.handleBatch(ctx, facts)
	for _, f := range facts {
		settled, deferred := c.deferral(f.in, f.err)
		f.returned(transport.Outcome{Err: f.err, Duplicate: f.dup, Deferred: deferred})
		in := f.in
		wait, again := c.settleInPlace(r, &in, f.dup, settled)
		j.later[at[f]] = inPlace{in: in, wait: wait, again: again}
	}
}
