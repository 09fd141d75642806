package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/warrenbus/warren/internal/amqpmsg"
)

// orderedState is what an ordered consumer remembers per ordering key: the
// last sequence number seen from each key's source, and the keys parked
// behind a poisoned fact. Both live in memory, for as long as the consumer
// runs; another instance taking over a shard starts without them.
type orderedState struct {
	mu     sync.Mutex
	last   map[string]seqSeen // ordering key -> the last fact seen of it
	parked map[string]parking // ordering key -> the poisoned fact it waits behind
}

// seqSeen is the highest numbered fact seen of a key, and which of the
// numbers just below it were seen too.
type seqSeen struct {
	source string
	seq    int64
	id     string
	tag    string // the consumer tag it came by: its shard's consumer
	// below has bit i set when number seq-1-i of the source was seen: a
	// fact of one of those numbers coming again (a relay that died before
	// deleting its rows publishes them again, a publisher republishes
	// after a lost channel, the broker redelivers after a lost ack) is the
	// same fact again, not a step back.
	below uint64
}

// seqWindow is how many numbers below the highest seen a key's memory
// covers (the bits of seqSeen.below).
const seqWindow = 64

// parking is a parked key's poisoned fact.
type parking struct {
	id string
	// replays is how often the fact had been replayed from poison when it
	// was poisoned (its x-replay-count): only a copy replayed since (a
	// higher count) lifts the park; the fact delivered again as it was (a
	// redelivery) does not.
	replays int
	// poisoned reports that the broker confirmed the fact's poison copy.
	// Until then the fact may come back unsettled, and its coming back
	// lifts the park: it is tried again as if it had never been poisoned.
	poisoned bool
	tag      string // the consumer tag it came by
}

// forgetTag forgets the keys seen through consumer tag: their shard was
// handed over, and another instance goes on with them.
func (s *orderedState) forgetTag(tag string) {
	if s == nil || tag == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, seen := range s.last {
		if seen.tag == tag {
			delete(s.last, key)
		}
	}
}

// parksTag reports whether a key that came by consumer tag is parked.
func (s *orderedState) parksTag(tag string) bool {
	if s == nil || tag == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parked {
		if p.tag == tag {
			return true
		}
	}
	return false
}

// headerReplayedAt and headerReplayCount are poison.HeaderReplayedAt and
// poison.HeaderReplayCount, set on facts replayed from a poison queue.
const (
	headerReplayedAt  = "x-replayed-at"
	headerReplayCount = "x-replay-count"
)

// replays is how often a fact was replayed from poison.
func replays(in inbound) int { return amqpmsg.HeaderInt(in.d.Headers, headerReplayCount) }

// maxTrackedKeys bounds the sequence memory: beyond it the memory starts
// afresh, and the next fact of each key is not checked.
const maxTrackedKeys = 100_000

func newOrderedState() *orderedState {
	return &orderedState{last: map[string]seqSeen{}, parked: map[string]parking{}}
}

// checkSequence compares a fact's sequence number with the highest one of
// its key from the same source: the article's sequential-processing check.
// A gap (facts missing: lost, still in another shard after a change of
// shards, or in a poison queue) and a step back (a number not seen yet
// below the highest, or the highest again with another id: a fact that
// arrived after a later one) are counted and logged; the fact is handled
// either way, since handling order is what the shards guarantee and the
// check only reports. The same fact again is neither: the highest number
// with its id, or one of the 64 numbers below it seen already (a
// redelivery, or facts published again by a relay that died before
// deleting their rows). A new source (a restarted publisher) starts a new
// sequence.
func (c *Consumer) checkSequence(in inbound) {
	source, seq, ok := sequenceOf(in.d.Headers)
	if _, replayed := in.d.Headers[headerReplayedAt]; !ok || replayed || c.ordered == nil {
		// A fact replayed from poison comes back on purpose behind
		// later ones: no step back to report, and no new last number.
		return
	}
	key, _ := in.d.Headers[HeaderOrderingKey].(string)
	s := c.ordered
	s.mu.Lock()
	prev, seen := s.last[key]
	if len(s.last) >= maxTrackedKeys && !seen {
		s.last = map[string]seqSeen{}
	}
	again := false
	next := seqSeen{source: source, seq: seq, id: in.d.MessageId, tag: in.d.ConsumerTag}
	switch {
	case !seen || prev.source != source:
	case seq > prev.seq:
		// The highest so far: the numbers below it move along.
		if shift := seq - prev.seq; shift <= seqWindow {
			next.below = (prev.below<<1 | 1) << (shift - 1)
		}
	case seq == prev.seq:
		again = prev.id == in.d.MessageId
		next.below = prev.below
	default:
		// Below the highest: the same fact again if its number was seen,
		// else a step back, remembered as seen. The highest stays.
		next = prev
		next.tag = in.d.ConsumerTag
		if d := prev.seq - seq; d <= seqWindow {
			bit := uint64(1) << (d - 1)
			again = prev.below&bit != 0
			next.below |= bit
		}
	}
	s.last[key] = next
	s.mu.Unlock()
	switch {
	case !seen || prev.source != source || again || seq == prev.seq+1:
	case seq > prev.seq+1:
		c.count(SequenceGap, in.routingKey)
		c.log.Warn("facts of an ordering key are missing: the sequence skipped numbers",
			"ordering_key", key, "expected", prev.seq+1, "received", seq, "source", source, "message_id", in.d.MessageId, "routing_key", in.routingKey)
	default:
		c.count(SequenceStepBack, in.routingKey)
		c.log.Warn("a fact of an ordering key arrived after a later one: the sequence stepped back",
			"ordering_key", key, "last", prev.seq, "received", seq, "source", source, "message_id", in.d.MessageId, "routing_key", in.routingKey)
	}
}

// poisonOrdered sends a fact to poison and, when the consumer parks, parks
// its key behind it: in the guard's database first, when the guard keeps
// parks ([ParkStore]), so that the park is kept before the fact leaves the
// shard, and in memory. Once the broker confirmed the copy the database's
// park records it, so that the fact delivered again (its ack lost) is
// known to be in poison already. A park the database refuses is kept in
// memory only (logged): the fact still goes to poison, rather than come
// back for ever while, say, the parks table is missing. It reports false
// when the poison copy was not confirmed (the fact was given back).
func (c *Consumer) poisonOrdered(ctx context.Context, in inbound, cause error) bool {
	key, _ := in.d.Headers[HeaderOrderingKey].(string)
	store := c.parkStore()
	if store != nil {
		if err := store.Park(ctx, c.spec.Name, key, in.d.MessageId, replays(in)); err != nil {
			c.log.Error("the park of an ordering key could not be written to the guard's database; it is kept in this instance's memory only (run the guard's Migrate?)",
				append(logAttrs(in, err), "ordering_key", key)...)
		}
	}
	if !c.poison(ctx, in, cause) {
		return false
	}
	if !c.spec.Park || c.ordered == nil {
		return true
	}
	if store != nil {
		if err := store.ConfirmPark(ctx, c.spec.Name, key, in.d.MessageId); err != nil {
			c.log.Warn("the confirmation of a poison copy could not be recorded with its park; should the fact be delivered again, it goes to poison again",
				append(logAttrs(in, err), "ordering_key", key)...)
		}
	}
	c.ordered.mu.Lock()
	if _, ok := c.ordered.parked[key]; !ok {
		c.ordered.parked[key] = parking{id: in.d.MessageId, replays: replays(in), poisoned: true, tag: in.d.ConsumerTag}
	}
	c.ordered.mu.Unlock()
	return true
}

// parkStore is the consumer's guard when it keeps parks and the consumer
// parks; nil otherwise.
func (c *Consumer) parkStore() ParkStore {
	if !c.spec.Park || c.ordered == nil {
		return nil
	}
	store, _ := c.opts.guard.(ParkStore)
	return store
}

// parkedBehind sends a fact of a parked key to poison, behind the poisoned
// fact it waits for, and reports whether it took the fact off the key
// (poisoned, acked, or given back when the copy was not confirmed or the
// park could not be lifted: settled reports which). The poisoned fact
// itself coming back replayed from poison (a higher x-replay-count than
// it had when poisoned) lifts the park: it is handled, and the facts
// parked behind it follow it in the poison queue's order. The poisoned
// fact delivered again as it was (its poison copy confirmed but its ack
// lost in a crash or a lost connection) is acked: it is in poison
// already, and a second copy would be replayed twice. Should the
// confirmation of its copy not have been recorded, it comes back before
// its park was known to hold, and is tried again as if never poisoned.
// With a [ParkStore] guard the database says whether the key is parked,
// whoever parked it: another instance, or this one before a restart; when
// it cannot be read, this instance's memory says.
func (c *Consumer) parkedBehind(ctx context.Context, in inbound) (parked, settled bool) {
	if _, ok := in.d.Headers[HeaderDiscarded]; ok && c.ordered != nil {
		return true, c.buryTombstone(ctx, in)
	}
	if !c.spec.Park || c.ordered == nil {
		return false, true
	}
	key, _ := in.d.Headers[HeaderOrderingKey].(string)
	c.ordered.mu.Lock()
	p, parked := c.ordered.parked[key]
	c.ordered.mu.Unlock()
	head := p
	store := c.parkStore()
	if store != nil {
		if id, n, poisoned, err := store.ParkedBehind(ctx, c.spec.Name, key); err != nil {
			c.log.Warn("the park of an ordering key could not be read from the guard's database; this instance's memory decides", append(logAttrs(in, err), "ordering_key", key)...)
		} else {
			head, parked = parking{id: id, replays: n, poisoned: poisoned}, id != ""
		}
	}
	if parked && head.id == in.d.MessageId {
		if head.poisoned && replays(in) <= head.replays {
			c.log.Info("the poisoned fact a key is parked behind came again without a replay; it is in poison already, acked",
				"message_id", in.d.MessageId, "routing_key", in.routingKey, "ordering_key", key)
			c.ack(in, DuplicateSkipped)
			return true, true
		}
		if store != nil {
			if err := store.Unpark(ctx, c.spec.Name, key); err != nil {
				c.log.Warn("the park of an ordering key could not be lifted; the fact goes back to its shard", append(logAttrs(in, err), "ordering_key", key)...)
				return true, false
			}
		}
		parked = false
	}
	c.ordered.mu.Lock()
	if parked {
		// The shard it comes by now (its consumer tag changes with each
		// channel) holds a parked key: it is not handed over.
		head.tag = in.d.ConsumerTag
		c.ordered.parked[key] = head
	} else {
		delete(c.ordered.parked, key)
	}
	c.ordered.mu.Unlock()
	if !parked {
		return false, true
	}
	return true, c.poison(ctx, in, Permanent(fmt.Errorf("parked: fact %s of ordering key %q went to poison before it; replay it (and then this one) once its cause is fixed", head.id, key)))
}

// buryTombstone settles a tombstone ([HeaderDiscarded]): the fact it
// stands for was discarded from poison, so the park its key has behind
// that fact, if any, is lifted (in the guard's database and in memory),
// and the tombstone is acked without calling a handler, counted as
// [DuplicateSkipped]. A park behind another fact stays. It reports false
// when the park could not be read or lifted from the database: the
// tombstone is given back to its shard, to be tried again, so that the
// key is not left parked behind a fact that will never return.
func (c *Consumer) buryTombstone(ctx context.Context, in inbound) (settled bool) {
	key, _ := in.d.Headers[HeaderOrderingKey].(string)
	lifted := false
	if store := c.parkStore(); store != nil {
		id, _, _, err := store.ParkedBehind(ctx, c.spec.Name, key)
		if err != nil {
			c.log.Warn("the park of an ordering key could not be read to bury a discarded fact's tombstone; the tombstone goes back to its shard", append(logAttrs(in, err), "ordering_key", key)...)
			return false
		}
		if id == in.d.MessageId {
			if err := store.Unpark(ctx, c.spec.Name, key); err != nil {
				c.log.Warn("the park of an ordering key could not be lifted for a discarded fact; its tombstone goes back to its shard", append(logAttrs(in, err), "ordering_key", key)...)
				return false
			}
			lifted = true
		}
	}
	c.ordered.mu.Lock()
	if p, ok := c.ordered.parked[key]; ok && p.id == in.d.MessageId {
		delete(c.ordered.parked, key)
		lifted = true
	}
	c.ordered.mu.Unlock()
	reason, _ := in.d.Headers[HeaderDiscarded].(string)
	c.log.Info("a fact was discarded from poison; its tombstone is acked without a handler",
		"message_id", in.d.MessageId, "routing_key", in.routingKey, "ordering_key", key, "park_lifted", lifted, "reason", reason)
	c.ack(in, DuplicateSkipped)
	return true
}
